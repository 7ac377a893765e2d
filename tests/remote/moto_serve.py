"""The MotoS3 fixture's child process (moto_fixture.py starts it as `python moto_serve.py`): moto's S3 server."""
import sys


def serve_main():
    """The child: moto's WSGI application (as moto.server.main builds it) in werkzeug's threaded server on a staging
    port at once, and on the public port when stdin says "serve PORT" (0: any), the staging one then closed. Each
    bound port is announced on stdout ("staging on 127.0.0.1:PORT", "serving on ..."); both servers share moto's
    in-memory backends. Exits when stdin closes."""
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)

    def serve(port, poll_interval):
        server = make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=server.serve_forever, args=(poll_interval,), daemon=True).start()
        return server

    staging = serve(0, 0.02)  # shutdown() waits for the serving loop's poll
    print(f"staging on 127.0.0.1:{staging.socket.getsockname()[1]}", flush=True)
    for line in sys.stdin:
        command, _, port = line.strip().partition(" ")
        if command == "serve" and staging is not None:
            public = serve(int(port), 0.5)
            staging.shutdown()
            staging.server_close()
            staging = None
            print(f"serving on 127.0.0.1:{public.socket.getsockname()[1]}", flush=True)


if __name__ == "__main__":
    serve_main()
