"""What deploy/kubernetes/ must hold (issue 17), checked offline: load() reads the manifests, problems() lists what
is wrong with them (the schema, k8s_schema.py, and the deployment's own rules below); [] when all is well.

The rules: a DaemonSet on GPU nodes (node selector or affinity, the GPU taint tolerated); its config from a
ConfigMap that the REAL daemon accepts (`batchd --check-config`), with workers and limits.max_shm_bytes set
explicitly; a memory limit covering max_shm_bytes plus 1 GiB plus 256 MiB per worker (memfd pages count against the
daemon's pod) and CPU for every worker; the socket in a hostPath directory that the trainer mounts, with
BATCHD_SOCKET naming it; probes running `batchctl health` on that socket (liveness and startup with --live, never
`status`, whose reply grows with the streams); non-root, no privilege escalation, every
capability dropped, a read-only root filesystem; /dev/shm shared with the trainers exactly when the strategy needs
it (file_system: hostIPC or a hostPath of /dev/shm in both pods, never an emptyDir); a trainer Job running torchrun
with --nnodes = its pods, --nproc-per-node = its GPUs, one pod per node, in batchd's group; the image's uid/gid and
runtime packages (Dockerfile) matching.
"""

import os
import pathlib
import re
import shlex
import subprocess
import tempfile
import tomllib

import yaml
from kubernetes.utils import parse_quantity

import k8s_schema

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
GiB, MiB = 1 << 30, 1 << 20
PER_WORKER, BASE = 256 * MiB, 1 * GiB


def load():
    """{'docs': [(file, manifest)], 'dockerfile': text}: every YAML document under deploy/kubernetes/."""
    docs = []
    for path in sorted(DEPLOY.glob("*.yaml")) + sorted(DEPLOY.glob("example/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((str(path.relative_to(ROOT)), doc))
    return {"docs": docs, "dockerfile": (DEPLOY / "Dockerfile").read_text()}


def one(m, kind, out):
    found = [d for _, d in m["docs"] if isinstance(d, dict) and d.get("kind") == kind]
    if len(found) != 1:
        out.append(f"expected one {kind}, found {len(found)}")
        return None
    return found[0]


def check_config(text):
    """'' if the real daemon accepts the config text, else its error."""
    batchd = os.environ.get("BATCHD_BIN", str(ROOT / "build" / "bin" / "batchd"))
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(text)
        f.flush()
        r = subprocess.run([batchd, "--check-config", "--config", f.name], capture_output=True, text=True)
    return "" if r.returncode == 0 else (r.stdout + r.stderr).strip() or f"exit {r.returncode}"


def pod(workload):
    return (workload.get("spec") or {}).get("template", {}).get("spec") or {}


def mount_of(spec, container, volume_name):
    for v in container.get("volumeMounts") or []:
        if v.get("name") == volume_name:
            return v.get("mountPath")
    return None


def host_paths(spec):
    return {v["name"]: v["hostPath"].get("path") for v in spec.get("volumes") or [] if "hostPath" in v}


def shares_dev_shm(spec, container):
    """How `container` of pod `spec` sees the node's /dev/shm: 'hostIPC', 'hostPath', or '' (its own)."""
    if spec.get("hostIPC"):
        return "hostIPC"
    for name, path in host_paths(spec).items():
        if path == "/dev/shm" and mount_of(spec, container, name) == "/dev/shm":
            return "hostPath"
    return ""


def security_problems(where, spec, container, out, root_may_chown=False):
    pod_sc, sc = spec.get("securityContext") or {}, container.get("securityContext") or {}
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if root_may_chown and user == 0:
        caps = sc.get("capabilities") or {}
        if set(caps.get("add") or []) - {"CHOWN"}:
            out.append(f"{where}: runs as root and adds {caps.get('add')}; CHOWN is all it may add")
    else:
        if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
            out.append(f"{where}: runAsNonRoot must be true")
        if not user or user == 0:
            out.append(f"{where}: runAsUser must be set to a non-root uid (got {user})")
        if not sc.get("runAsGroup", pod_sc.get("runAsGroup")):
            out.append(f"{where}: runAsGroup must be set")
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(f"{where}: securityContext.allowPrivilegeEscalation must be false")
    if sc.get("privileged"):
        out.append(f"{where}: must not be privileged")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        out.append(f"{where}: securityContext.capabilities.drop must hold ALL")


def probe_problems(name, probe, socket, out, required):
    if probe is None:
        if required:
            out.append(f"DaemonSet: the batchd container has no {name}")
        return
    command = ((probe.get("exec") or {}).get("command")) or []
    # A liveness (or startup) probe that failed while the daemon drains would restart it and fail every user's
    # streams: answering is enough there (--live).
    wanted = ["health"] if name == "readinessProbe" else ["health", "--live"]
    if not command or not command[0].endswith("batchctl") or any(w not in command for w in wanted):
        out.append(f"DaemonSet: {name} must run `batchctl {' '.join(wanted)}`, runs {command}")
    elif socket != "/run/batchd/batchd.sock" and socket not in command:
        out.append(f"DaemonSet: {name} must name the socket {socket} (--socket), runs {command}")


def problems(m):
    out = []
    for file, doc in m["docs"]:
        out += [f"{file}: {p}" for p in k8s_schema.problems(doc)]
    ns, cm, ds = one(m, "Namespace", out), one(m, "ConfigMap", out), one(m, "DaemonSet", out)
    job, svc = one(m, "Job", out), one(m, "Service", out)
    if out or not all((ns, cm, ds, job, svc)):
        return out  # the rules below need well-formed manifests
    name = ns["metadata"]["name"]
    for d in (cm, ds):
        if d["metadata"].get("namespace") != name:
            out.append(f"{d['kind']}: must be in namespace {name}")
    spec = pod(ds)
    containers = {c["name"]: c for c in spec.get("containers") or []}
    daemon = containers.get("batchd")
    if daemon is None:
        return out + ["DaemonSet: no container named batchd"]

    # GPU nodes.
    if not spec.get("nodeSelector") and not (spec.get("affinity") or {}).get("nodeAffinity"):
        out.append("DaemonSet: no nodeSelector or nodeAffinity: it must run on GPU nodes only")
    if not any("gpu" in (t.get("key") or "") for t in spec.get("tolerations") or []):
        out.append("DaemonSet: no toleration of the GPU nodes' taint (nvidia.com/gpu)")

    # The config: from the ConfigMap, accepted by the real daemon.
    argv = (daemon.get("command") or []) + (daemon.get("args") or [])
    config_path = argv[argv.index("--config") + 1] if "--config" in argv[:-1] else None
    if config_path is None:
        return out + [f"DaemonSet: batchd must be started with --config FILE, runs {argv}"]
    cm_volume = next((v["name"] for v in spec.get("volumes") or []
                      if (v.get("configMap") or {}).get("name") == cm["metadata"]["name"]), None)
    if cm_volume is None or mount_of(spec, daemon, cm_volume) != os.path.dirname(config_path):
        out.append(f"DaemonSet: the ConfigMap {cm['metadata']['name']} must be mounted at {os.path.dirname(config_path)}")
    text = (cm.get("data") or {}).get(os.path.basename(config_path))
    if text is None:
        return out + [f"ConfigMap: no key {os.path.basename(config_path)} (the file batchd reads)"]
    config = tomllib.loads(text)
    if why := check_config(text):
        out.append(f"ConfigMap: batchd --check-config refuses it: {why}")
    d, limits = config.get("daemon", {}), config.get("limits", {})
    socket = d.get("socket", "/run/batchd/batchd.sock")
    workers, max_shm = d.get("workers", 0), limits.get("max_shm_bytes", 0)
    if workers <= 0:
        out.append("ConfigMap: daemon.workers must be set (0 counts the node's cores, not the pod's CPUs)")
    if max_shm <= 0:
        out.append("ConfigMap: limits.max_shm_bytes must be set (0 is half of the node's memory, not the pod's)")
    if not (config.get("datasets") or {}):
        out.append("ConfigMap: declares no dataset")

    # Memory and CPU.
    res = daemon.get("resources") or {}
    memory = (res.get("limits") or {}).get("memory")
    need = max_shm + BASE + max(workers, 0) * PER_WORKER
    if memory is None:
        out.append("DaemonSet: batchd has no memory limit")
    elif parse_quantity(memory) < need:
        out.append(f"DaemonSet: memory limit {memory} < limits.max_shm_bytes + 1 GiB + {workers} x 256 MiB "
                   f"= {need} bytes (memfd pages count against the daemon's pod)")
    requests = res.get("requests") or {}
    if "memory" not in requests or "cpu" not in requests:
        out.append("DaemonSet: batchd must request cpu and memory")
    elif parse_quantity(requests["cpu"]) < workers:
        out.append(f"DaemonSet: cpu request {requests['cpu']} < {workers} workers")

    # The socket: a hostPath directory, shared with the trainer, named by BATCHD_SOCKET.
    sock_dir = os.path.dirname(socket)
    host_dir = next((host_paths(spec)[v] for v in host_paths(spec) if mount_of(spec, daemon, v) == sock_dir), None)
    if host_dir is None:
        out.append(f"DaemonSet: the socket directory {sock_dir} must be a hostPath volume")
    for probe, required in (("livenessProbe", True), ("readinessProbe", False), ("startupProbe", False)):
        probe_problems(probe, daemon.get(probe), socket, out, required)

    # Non-root; the image's user.
    security_problems("DaemonSet batchd", spec, daemon, out)
    if not (daemon.get("securityContext") or {}).get("readOnlyRootFilesystem"):
        out.append("DaemonSet batchd: readOnlyRootFilesystem must be true")
    for c in spec.get("initContainers") or []:
        security_problems(f"DaemonSet init container {c['name']}", spec, c, out, root_may_chown=True)
    uid = re.search(r"useradd [^\n]*--uid (\d+)", m["dockerfile"])
    gid = re.search(r"groupadd [^\n]*--gid (\d+)", m["dockerfile"])
    pod_sc = spec.get("securityContext") or {}
    if not uid or not gid or (int(uid[1]), int(gid[1])) != (pod_sc.get("runAsUser"), pod_sc.get("runAsGroup")):
        out.append("DaemonSet: runAsUser/runAsGroup must be the image's batchd uid/gid (Dockerfile useradd/groupadd)")

    out += trainer_problems(job, svc, spec, daemon, socket, host_dir, d.get("shm_strategy", "file_descriptor"))
    return out


def flag(args, name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return args[args.index(name) + 1] if name in args[:-1] else None


def trainer_problems(job, svc, ds_spec, daemon, socket, host_dir, strategy):
    out = []
    spec = pod(job)
    trainer = (spec.get("containers") or [{}])[0]
    argv = (trainer.get("command") or []) + (trainer.get("args") or [])
    if len(argv) == 3 and argv[:2] in (["/bin/sh", "-c"], ["sh", "-c"], ["bash", "-c"]):
        argv = shlex.split(argv[2])
    if not argv or os.path.basename(argv[0]) != "torchrun":
        return [f"Job: the trainer must run torchrun, runs {argv}"]
    nnodes, nproc, endpoint = flag(argv, "--nnodes"), flag(argv, "--nproc-per-node"), flag(argv, "--rdzv-endpoint")
    js = job.get("spec") or {}
    if nnodes is None or str(js.get("completions")) != nnodes or str(js.get("parallelism")) != nnodes:
        out.append(f"Job: --nnodes={nnodes} must equal completions and parallelism (one pod per node)")
    if js.get("completionMode") != "Indexed":
        out.append("Job: completionMode must be Indexed (stable pod names for the rendezvous)")
    gpus = ((trainer.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
    if nproc is None or str(gpus) != nproc:
        out.append(f"Job: --nproc-per-node={nproc} must equal the pod's nvidia.com/gpu limit ({gpus})")
    host = f"{job['metadata']['name']}-0.{spec.get('subdomain')}"
    if not endpoint or not endpoint.startswith(host + ":") or svc["metadata"]["name"] != spec.get("subdomain") \
            or (svc.get("spec") or {}).get("clusterIP") != "None":
        out.append(f"Job: --rdzv-endpoint must be {host}:<port>, pod 0 behind the headless Service {spec.get('subdomain')}")
    anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not anti or anti[0].get("topologyKey") != "kubernetes.io/hostname":
        out.append("Job: needs a required podAntiAffinity on kubernetes.io/hostname (one pod per node)")
    if spec.get("nodeSelector") != ds_spec.get("nodeSelector"):
        out.append("Job: its nodeSelector must be the DaemonSet's (run where batchd runs)")
    # The socket.
    mounts = [mount_of(spec, trainer, v) for v, p in host_paths(spec).items() if p == host_dir]
    env = {e.get("name"): e.get("value") for e in trainer.get("env") or []}
    if not mounts or mounts[0] is None:
        out.append(f"Job: the trainer must mount the hostPath {host_dir} (the daemon's socket directory)")
    elif env.get("BATCHD_SOCKET") != os.path.join(mounts[0], os.path.basename(socket)):
        out.append(f"Job: BATCHD_SOCKET must be {os.path.join(mounts[0], os.path.basename(socket))}, "
                   f"is {env.get('BATCHD_SOCKET')}")
    security_problems("Job trainer", spec, trainer, out)
    gid = (ds_spec.get("securityContext") or {}).get("runAsGroup")
    if gid not in ((spec.get("securityContext") or {}).get("supplementalGroups") or []):
        out.append(f"Job: supplementalGroups must hold batchd's group {gid} (the socket is mode 0660)")
    # /dev/shm: shared exactly when the strategy needs it.
    daemon_shm, trainer_shm = shares_dev_shm(ds_spec, daemon), shares_dev_shm(spec, trainer)
    if strategy == "file_system" and not (daemon_shm and trainer_shm):
        out.append("shm_strategy file_system: the daemon and the trainer must both see the node's /dev/shm (hostIPC "
                   "or a hostPath of /dev/shm in both; an emptyDir is one pod's own)")
    if strategy != "file_system" and ds_spec.get("hostIPC"):
        out.append("DaemonSet: hostIPC is not needed with shm_strategy file_descriptor (memfds cross the socket)")
    return out
