# The Python tests (pytest, in the Python of cmake/BatchdPython.cmake: the project venv) and the ops module of the
# fidelity tests; included by tests/CMakeLists.txt when that Python has pybind11. Every one of them needs the
# fixture python_env: tests/python_env/check_env.py, which fails (and so stops them all) when that Python's torch,
# torchvision or numpy is older than the minimum README.md names.
add_test(NAME python_environment COMMAND ${Python_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/python_env/check_env.py)
set_tests_properties(python_environment PROPERTIES FIXTURES_SETUP python_env TIMEOUT 120)
# ... and that check itself: it fails on an older torch, torchvision or numpy, or a missing test package.
add_test(NAME python_environment_check
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/python_env/test_check_env.py)
set_tests_properties(python_environment_check PROPERTIES TIMEOUT 300)

# deploy/kubernetes/ validated offline: the Kubernetes API schema (python3-kubernetes' models), the deployment's rules
# (tests/kubernetes/manifests.py), the ConfigMap's batchd.toml through `batchd --check-config`, the image's packages.
add_test(NAME kubernetes_manifests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning ${PROJECT_SOURCE_DIR}/tests/kubernetes)
set_tests_properties(kubernetes_manifests PROPERTIES FIXTURES_REQUIRED python_env TIMEOUT 120
                     ENVIRONMENT "BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd")

# `pip install --no-build-isolation .` into a venv, then `python -m batchd` and a Loader epoch from outside the source
# tree (tests/package/test_pip_install.py). Slow: pip builds _batchd with CMake in build-pip/ (~1 min on 2 cores).
add_test(NAME python_pip_install
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning ${PROJECT_SOURCE_DIR}/tests/package)
set_tests_properties(python_pip_install PROPERTIES FIXTURES_REQUIRED python_env TIMEOUT 900 LABELS "package;slow"
                     ENVIRONMENT "BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd")

# batchd's ops as a Python module for the fidelity tests against torchvision 0.14 (tests/ops/test_*.py); tests only,
# never installed. Each op family binds its functions in tests/ops/bind_<family>.cc.
pybind11_add_module(batchd_ops_testing ops/ops_testing_module.cc ops/bind_resample.cc ops/bind_geometry.cc
                    ops/bind_spec.cc ops/bind_augment.cc ops/bind_color.cc ops/bind_tensor.cc ops/bind_batch.cc)
target_link_libraries(batchd_ops_testing PRIVATE batchd_daemon)
set_target_properties(batchd_ops_testing PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/ops_python)
add_test(NAME op_fidelity_tests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning ${PROJECT_SOURCE_DIR}/tests/ops)
set_tests_properties(op_fidelity_tests PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "testdata;python_env"
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/ops_python;BATCHD_TESTDATA=${CMAKE_BINARY_DIR}/testdata")

# The Python client (batchd.Loader) with pytest, against a real daemon (the example's runs are a test of their own).
add_test(NAME python_loader_tests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning ${PROJECT_SOURCE_DIR}/tests/python
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_example_train_imagefolder.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset_faults.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset_lifecycle.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_shared_daemon_costs.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_own_sampler.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_worker_order.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_completion_order.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_own_iterable.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_slot_growth.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_fed_faults.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_collate.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_dataloader_checks.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_timm_loader.py
                 --ignore=${PROJECT_SOURCE_DIR}/tests/python/test_lightning_ddp.py)
# test_spec_streams.py reads the generated image folder (the make_testdata fixture).
set_tests_properties(python_loader_tests PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "testdata;python_env"
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd;BATCHD_TESTDATA=${CMAKE_BINARY_DIR}/testdata")

# Your own Dataset as DataLoader gives it (issue 40): DataLoader's sampler in the trainer, round robin, IterableDataset,
# slot growth, their faults, batches of any structure, DataLoader's argument checks, and the public scripts (timm's
# create_loader over a generated image folder, Lightning's DDP over 2 CPU processes). About 3 minutes on 2 cores.
add_test(NAME python_dataloader_parity_tests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/python/test_own_sampler.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_worker_order.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_completion_order.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_own_iterable.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_slot_growth.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_fed_faults.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_collate.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_dataloader_checks.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_timm_loader.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_lightning_ddp.py)
set_tests_properties(python_dataloader_parity_tests PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "testdata;python_env"
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd;BATCHD_TESTDATA=${CMAKE_BINARY_DIR}/testdata")

# Your own Dataset (issue 26): a trainer's Python Dataset made by the Loader's worker processes, against real daemons
# (delivery, seeding, worker_info, __getitems__, spawn, collate structures and dtypes; dead, hung and failing workers,
# a SIGKILLed trainer, another uid). About 25 s on 2 idle cores; their datasets are tests/python/own_datasets.py.
add_test(NAME python_own_dataset_tests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset_faults.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_own_dataset_lifecycle.py
                 ${PROJECT_SOURCE_DIR}/tests/python/test_shared_daemon_costs.py)
set_tests_properties(python_own_dataset_tests PROPERTIES FIXTURES_REQUIRED python_env TIMEOUT 300
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd")

# PyTorch's own DataLoader tests (test/test_dataloader.py of the pinned PyTorch 2.6.0, fetched by setup.sh --tests
# into build/conformance/) with torch.utils.data.DataLoader replaced by batchd.Loader (issue 40, item 7;
# tests/conformance/README.md): fails when a test recorded in tests/conformance/batchd_passes.txt fails, and prints
# the counts. About 4 minutes on 2 cores; 60 s per test at most (pytest-timeout).
add_test(NAME dataloader_conformance
         COMMAND ${Python_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/conformance/run_conformance.py --systems batchd
                 --timeout 60 --test-file ${CMAKE_BINARY_DIR}/conformance/test_dataloader.py)
set_tests_properties(dataloader_conformance PROPERTIES LABELS conformance TIMEOUT 1200 FIXTURES_REQUIRED python_env
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd")

# examples/train_imagefolder.py, one short epoch on the CPU over the generated image folder: with DataLoader, with
# batchd.Loader and no daemon (a private one, gone after), with batchd.Loader and a daemon that declares the folder;
# and two ranks (gloo) through its DistributedSampler path.
add_test(NAME example_train_imagefolder
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/python/test_example_train_imagefolder.py)
set_tests_properties(example_train_imagefolder PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "testdata;python_env"
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd;BATCHD_TESTDATA=${CMAKE_BINARY_DIR}/testdata")

# bench/plot.py draws its charts (valid PNGs) from the benchmark JSON recorded in bench/results/.
add_test(NAME bench_plot COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning ${PROJECT_SOURCE_DIR}/tests/bench)
set_tests_properties(bench_plot PROPERTIES FIXTURES_REQUIRED python_env TIMEOUT 300)

# The S3-compatible server of the remote-shard tests (issue 28): moto's server mode (moto[server] from
# tests/requirements.txt, in the project venv), a process started by tests/remote/moto_fixture.py; its lifetime
# (restart with the objects uploaded again) and the S3 behaviour batchd relies on (ETags, ranges, ListObjectsV2 pages,
# conditionals, 404s, SigV4 checked), through botocore and the curl CLI. About 10 s.
add_test(NAME remote_moto_fixture
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/remote/test_moto_fixture.py
                 ${PROJECT_SOURCE_DIR}/tests/remote/test_moto_fixture_lifecycle.py)
set_tests_properties(remote_moto_fixture PROPERTIES FIXTURES_REQUIRED python_env TIMEOUT 120 LABELS remote)

# Remote shards through real daemons (issue 28): exactly-once from s3:// (moto's S3 server), http:// and https://
# (fault_server.py, a test CA) equal to the same shards read locally; prefetch counters; the bounded shard cache; a
# daemon SIGKILLed mid-download; 503/reset/truncate/stall retried; 403/404/untrusted CA/config refusals; moto's server
# killed mid-transfer; a shard replaced on the server; credentials in no log; hostile servers (a listing nested
# 50,000 deep, a listed key holding a newline) and a presigned URL. About 40 s on 2 idle cores.
# (python_loader_tests collects tests/python only.)
add_test(NAME python_remote_tests
         COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider -W error::DeprecationWarning
                 ${PROJECT_SOURCE_DIR}/tests/remote/test_daemon_remote.py
                 ${PROJECT_SOURCE_DIR}/tests/remote/test_daemon_remote_faults.py
                 ${PROJECT_SOURCE_DIR}/tests/remote/test_daemon_remote_hostile.py)
set_tests_properties(python_remote_tests PROPERTIES TIMEOUT 600 LABELS remote FIXTURES_REQUIRED "testdata;python_env"
                     ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;BATCHD_BIN=${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/batchd;BATCHD_TESTDATA=${CMAKE_BINARY_DIR}/testdata")
