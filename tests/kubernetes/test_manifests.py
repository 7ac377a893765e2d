"""deploy/kubernetes/ validated offline (manifests.py: the Kubernetes API schema of the kubernetes client, then the
deployment's rules, the config checked by the real daemon), and each rule shown to catch what it is for: every
mutation below (a field removed or changed) must make problems() report it."""

import copy
import os
import pathlib
import subprocess

import pytest

import manifests

M = manifests.load()


def test_the_manifests_have_no_problems():
    assert manifests.problems(M) == []


def doc(m, kind):
    return next(d for _, d in m["docs"] if d.get("kind") == kind)


def daemon(m):
    return doc(m, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]


def trainer(m):
    return doc(m, "Job")["spec"]["template"]["spec"]["containers"][0]


def ds_pod(m):
    return doc(m, "DaemonSet")["spec"]["template"]["spec"]


def job_pod(m):
    return doc(m, "Job")["spec"]["template"]["spec"]


def edit_config(old, new):
    def edit(m):
        cm = doc(m, "ConfigMap")
        assert old in cm["data"]["batchd.toml"], old
        cm["data"]["batchd.toml"] = cm["data"]["batchd.toml"].replace(old, new)
    return edit


def set_arg(prefix, value):
    def edit(m):
        args = trainer(m)["args"]
        args[[a.startswith(prefix) for a in args].index(True)] = prefix + value
    return edit


MUTATIONS = {
    # The schema.
    "unknown kind": (lambda m: doc(m, "DaemonSet").update(apiVersion="extensions/v1beta1"), "unknown apiVersion/kind"),
    "misspelt field": (lambda m: daemon(m)["securityContext"].update(readOnlyRootFileSystem=True), "no such field"),
    "wrong type": (lambda m: ds_pod(m).update(terminationGracePeriodSeconds="30"), "expected int"),
    "bad quantity": (lambda m: daemon(m)["resources"]["limits"].update(memory="11 GiB"), "not a Kubernetes quantity"),
    "required field": (lambda m: daemon(m).pop("name"), "missing its required field(s) name"),
    # GPU nodes.
    "no node selector": (lambda m: ds_pod(m).pop("nodeSelector"), "GPU nodes only"),
    "no toleration": (lambda m: ds_pod(m).pop("tolerations"), "taint"),
    # The config.
    "config not mounted": (lambda m: daemon(m)["volumeMounts"].pop(1), "must be mounted at /etc/batchd"),
    "config the daemon refuses": (edit_config("workers = 8", "workerz = 8"), "batchd --check-config refuses it"),
    "config value out of range": (edit_config('socket_mode = "0660"', 'socket_mode = "1777"'), "--check-config"),
    "workers per core": (edit_config("workers = 8", "workers = 0"), "daemon.workers must be set"),
    "max_shm_bytes half of the node": (edit_config("max_shm_bytes = 8589934592", "max_shm_bytes = 0"),
                                       "limits.max_shm_bytes must be set"),
    # Memory and CPU.
    "no memory limit": (lambda m: daemon(m)["resources"]["limits"].pop("memory"), "no memory limit"),
    "memory limit below the segments": (lambda m: daemon(m)["resources"]["limits"].update(memory="9Gi"),
                                        "memory limit 9Gi <"),
    "segments grown past the limit": (edit_config("max_shm_bytes = 8589934592", "max_shm_bytes = 10737418240"),
                                      "memory limit 11Gi <"),
    "no requests": (lambda m: daemon(m)["resources"].pop("requests"), "must request cpu and memory"),
    # The socket and the probes.
    "socket not on the host": (lambda m: ds_pod(m)["volumes"].pop(0), "must be a hostPath volume"),
    "no liveness probe": (lambda m: daemon(m).pop("livenessProbe"), "has no livenessProbe"),
    "liveness probe not batchctl": (lambda m: daemon(m)["livenessProbe"]["exec"].update(command=["true"]),
                                    "livenessProbe must run `batchctl health --live`"),
    "liveness probe asks for the whole status": (lambda m: daemon(m)["livenessProbe"]["exec"].update(
        command=["/usr/bin/batchctl", "status"]), "livenessProbe must run `batchctl health --live`"),
    "liveness probe fails while draining": (lambda m: daemon(m)["livenessProbe"]["exec"].update(
        command=["/usr/bin/batchctl", "health"]), "livenessProbe must run `batchctl health --live`"),
    "readiness probe asks for the whole status": (lambda m: daemon(m)["readinessProbe"]["exec"].update(
        command=["/usr/bin/batchctl", "status"]), "readinessProbe must run `batchctl health`"),
    # Security.
    "runs as root": (lambda m: ds_pod(m)["securityContext"].update(runAsUser=0, runAsNonRoot=False), "non-root uid"),
    "privilege escalation": (lambda m: daemon(m)["securityContext"].update(allowPrivilegeEscalation=True),
                             "allowPrivilegeEscalation must be false"),
    "capabilities kept": (lambda m: daemon(m)["securityContext"].pop("capabilities"), "drop must hold ALL"),
    "writable root": (lambda m: daemon(m)["securityContext"].pop("readOnlyRootFilesystem"), "readOnlyRootFilesystem"),
    "init container adds more": (lambda m: ds_pod(m)["initContainers"][0]["securityContext"]["capabilities"]
                                 .update(add=["CHOWN", "SYS_ADMIN"]), "CHOWN is all it may add"),
    "uid not the image's": (lambda m: ds_pod(m)["securityContext"].update(runAsUser=999), "the image's batchd uid"),
    # /dev/shm.
    "file_system without a shared /dev/shm": (edit_config('shm_strategy = "file_descriptor"',
                                                          'shm_strategy = "file_system"'), "must both see"),
    "hostIPC for nothing": (lambda m: ds_pod(m).update(hostIPC=True), "hostIPC is not needed"),
    # The trainer.
    "trainer without torchrun": (lambda m: trainer(m).update(command=["python3"]), "must run torchrun"),
    "nnodes not the pods": (set_arg("--nnodes=", "3"), "--nnodes=3 must equal completions"),
    "nproc not the GPUs": (set_arg("--nproc-per-node=", "4"), "--nproc-per-node=4 must equal"),
    "rendezvous elsewhere": (set_arg("--rdzv-endpoint=", "localhost:29400"), "--rdzv-endpoint must be"),
    "two pods per node": (lambda m: job_pod(m).pop("affinity"), "one pod per node"),
    "no BATCHD_SOCKET": (lambda m: trainer(m).pop("env"), "BATCHD_SOCKET must be /run/batchd/batchd.sock"),
    "socket not mounted by the trainer": (lambda m: job_pod(m)["volumes"].pop(0), "must mount the hostPath"),
    "trainer not in batchd's group": (lambda m: job_pod(m)["securityContext"].pop("supplementalGroups"),
                                      "supplementalGroups must hold"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_rule_catches_its_mutation(name):
    mutate, expected = MUTATIONS[name]
    m = copy.deepcopy(M)
    mutate(m)
    found = manifests.problems(m)
    assert any(expected in p for p in found), f"{name}: expected a problem with {expected!r}, got {found}"


def test_file_system_with_a_hostpath_of_dev_shm_in_both_pods_is_accepted():
    m = copy.deepcopy(M)
    edit_config('shm_strategy = "file_descriptor"', 'shm_strategy = "file_system"')(m)
    for spec, container in ((ds_pod(m), daemon(m)), (job_pod(m), trainer(m))):
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "dshm"]
        container["volumeMounts"] = [v for v in container["volumeMounts"] if v["name"] != "dshm"]
        spec["volumes"].append({"name": "host-shm", "hostPath": {"path": "/dev/shm", "type": "Directory"}})
        container["volumeMounts"].append({"name": "host-shm", "mountPath": "/dev/shm"})
    assert manifests.problems(m) == []


def needed_packages(binary):
    """The Debian packages of the shared libraries `binary` links directly (its ELF NEEDED entries)."""
    needed = [line.split()[-1] for line in subprocess.run(["objdump", "-p", binary], capture_output=True, text=True,
                                                          check=True).stdout.splitlines() if "NEEDED" in line]
    paths = {}
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>":
            paths[parts[0]] = os.path.realpath(parts[2])
    packages = set()
    for lib in needed:
        if lib.startswith("ld-linux"):
            continue  # the dynamic loader: libc6
        path = paths[lib]
        for candidate in (path, "/usr" + path if not path.startswith("/usr") else path[4:]):
            r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if r.returncode == 0:
                packages.add(r.stdout.split(":")[0])
                break
        else:
            raise AssertionError(f"{binary}: no Debian package holds {lib} ({path})")
    return packages


def test_the_image_installs_every_library_batchd_and_batchctl_link():
    bin_dir = pathlib.Path(os.environ.get("BATCHD_BIN", manifests.ROOT / "build/bin/batchd")).parent
    runtime = M["dockerfile"].split("FROM debian:bookworm\n", 1)[1]
    for binary in ("batchd", "batchctl"):
        for package in needed_packages(str(bin_dir / binary)) - {"libc6", "libgcc-s1"}:  # Essential in the base
            assert f" {package} " in runtime.replace("\\\n", " ").replace("\n", " "), \
                f"deploy/kubernetes/Dockerfile's runtime stage must install {package} ({binary} links it)"
