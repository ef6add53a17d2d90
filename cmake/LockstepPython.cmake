# The Python extension (python/, `import lockstep`): nanobind, found through
# the Python interpreter that has it installed.
#
# LOCKSTEP_BUILD_PYTHON: ON (the wheel build: pyproject.toml), OFF, or AUTO
# (the default): built when a Python interpreter with its headers and the
# nanobind package is found, skipped with the reason otherwise. Without an
# interpreter named by Python_EXECUTABLE (or an active virtual environment),
# the source tree's .venv (tools/setup_debian.sh creates it) is preferred.
# AUTO skips sanitizer and fuzzer builds: the extension is loaded by an
# uninstrumented interpreter.
#
# Sets LOCKSTEP_HAVE_PYTHON, LOCKSTEP_PYTHON_WHY (why not) and, when on,
# CMAKE_POSITION_INDEPENDENT_CODE (the libraries link into a shared module).

set(LOCKSTEP_HAVE_PYTHON OFF)
set(LOCKSTEP_PYTHON_WHY "LOCKSTEP_BUILD_PYTHON=OFF")
set(lockstep_python_wanted ${LOCKSTEP_BUILD_PYTHON})
if(lockstep_python_wanted STREQUAL "AUTO" AND (LOCKSTEP_SANITIZER OR LOCKSTEP_BUILD_FUZZERS))
  set(lockstep_python_wanted OFF)
  set(LOCKSTEP_PYTHON_WHY "not built with sanitizers or fuzzers; LOCKSTEP_BUILD_PYTHON=ON forces it")
endif()

if(NOT lockstep_python_wanted STREQUAL "OFF")
  if(NOT DEFINED Python_EXECUTABLE AND NOT DEFINED ENV{VIRTUAL_ENV}
     AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
  endif()
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
  if(NOT Python_FOUND)
    set(LOCKSTEP_PYTHON_WHY "no Python interpreter with its headers (apt install python3-dev)")
  else()
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
      OUTPUT_VARIABLE lockstep_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE lockstep_nanobind_rc ERROR_QUIET)
    if(lockstep_nanobind_rc EQUAL 0)
      find_package(nanobind CONFIG QUIET PATHS "${lockstep_nanobind_dir}" NO_DEFAULT_PATH)
    endif()
    if(nanobind_FOUND)
      set(LOCKSTEP_HAVE_PYTHON ON)
      set(LOCKSTEP_PYTHON_WHY "")
      set(CMAKE_POSITION_INDEPENDENT_CODE ON)
      message(STATUS "lockstep: Python extension enabled (${Python_EXECUTABLE}, nanobind "
                     "${nanobind_VERSION})")
    else()
      set(LOCKSTEP_PYTHON_WHY "nanobind not found for ${Python_EXECUTABLE}: tools/setup_debian.sh creates .venv with it, or pip install nanobind")
    endif()
  endif()
  if(NOT LOCKSTEP_HAVE_PYTHON AND lockstep_python_wanted STREQUAL "ON")
    message(FATAL_ERROR "LOCKSTEP_BUILD_PYTHON=ON but ${LOCKSTEP_PYTHON_WHY}")
  endif()
endif()
if(NOT LOCKSTEP_HAVE_PYTHON)
  message(STATUS "lockstep: Python extension skipped (${LOCKSTEP_PYTHON_WHY})")
endif()
