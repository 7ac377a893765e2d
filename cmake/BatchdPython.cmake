# BatchdPython.cmake — which Python the module (client/python) and the Python tests use, and its pybind11.
#
# Python_EXECUTABLE: given with -D, else the project's venv (.venv/bin/python, made by `./setup.sh --tests`), else
# none. pybind11 is the one installed in that Python (PyPI's: numpy 2 needs pybind11 >= 2.12, Debian 12 has 2.10),
# found through `python -m pybind11 --cmakedir`. Sets:
#   BATCHD_HAVE_PYTHON  ON when the module can be built (a Python with pybind11 and its headers)
#   BATCHD_PYTHON_WHY   why not, for the message and the tests' placeholder
# BATCHD_PYTHON=OFF builds no Python module (the fuzz and thread-safety trees).
option(BATCHD_PYTHON "Build the Python module _batchd (needs a Python with pybind11 >= 2.12)" ON)
set(BATCHD_HAVE_PYTHON OFF)
set(BATCHD_PYTHON_WHY "")
if(NOT BATCHD_PYTHON)
  set(BATCHD_PYTHON_WHY "BATCHD_PYTHON=OFF")
  return()
endif()
if(NOT Python_EXECUTABLE AND EXISTS ${PROJECT_SOURCE_DIR}/.venv/bin/python)
  set(Python_EXECUTABLE ${PROJECT_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH "Python for the batchd module and its tests")
endif()
if(NOT Python_EXECUTABLE)
  string(CONCAT BATCHD_PYTHON_WHY "no Python given and no project venv (.venv/): run ./setup.sh --tests, or "
         "configure with -DPython_EXECUTABLE=/path/to/venv/bin/python (a venv with pybind11 >= 2.12)")
  message(STATUS "batchd: Python module: OFF (${BATCHD_PYTHON_WHY})")
  return()
endif()
execute_process(COMMAND ${Python_EXECUTABLE} -c
                  "import pybind11, sys; v = tuple(int(x) for x in pybind11.__version__.split('.')[:2]); \
sys.exit('pybind11 ' + pybind11.__version__ + ' is older than 2.12') if v < (2, 12) else print(pybind11.get_cmake_dir())"
                OUTPUT_VARIABLE _batchd_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_VARIABLE _batchd_pybind11_err ERROR_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _batchd_pybind11_rc)
if(NOT _batchd_pybind11_rc EQUAL 0)
  string(REGEX REPLACE ".*\n" "" _batchd_pybind11_err "${_batchd_pybind11_err}")  # the last line
  set(BATCHD_PYTHON_WHY "${Python_EXECUTABLE}: ${_batchd_pybind11_err} (pip install 'pybind11>=2.12', or ./setup.sh --tests)")
  message(STATUS "batchd: Python module: OFF (${BATCHD_PYTHON_WHY})")
  return()
endif()
set(pybind11_DIR ${_batchd_pybind11_dir} CACHE PATH "pybind11's CMake files, from the Python that builds the module" FORCE)
set(PYBIND11_FINDPYTHON ON)
find_package(Python COMPONENTS Interpreter Development.Module)
if(NOT Python_Development.Module_FOUND)
  set(BATCHD_PYTHON_WHY "no headers for ${Python_EXECUTABLE} (Debian: apt-get install python3-dev; setup.sh does)")
  message(STATUS "batchd: Python module: OFF (${BATCHD_PYTHON_WHY})")
  return()
endif()
find_package(pybind11 2.12 CONFIG REQUIRED)
set(BATCHD_HAVE_PYTHON ON)
message(STATUS "batchd: Python module: ON (${Python_EXECUTABLE}, pybind11 ${pybind11_VERSION})")
