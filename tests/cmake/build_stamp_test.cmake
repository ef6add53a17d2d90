# Tests cmake/LockstepBuildStamp.cmake in a scratch directory: outside a git
# checkout, in a clean one, in one with two different edits, and that an
# unchanged stamp is not rewritten (so nothing relinks).
#
#   cmake -DSOURCE_DIR=<repo> -DSCRATCH=<dir> -P tests/cmake/build_stamp_test.cmake
# Exits 77 (ctest's skip) without git.

cmake_policy(VERSION 3.25)
set(script "${SOURCE_DIR}/cmake/LockstepBuildStamp.cmake")
set(tree "${SCRATCH}/build_stamp_test")
set(out "${tree}/stamp.h")
file(REMOVE_RECURSE "${tree}")
file(MAKE_DIRECTORY "${tree}/src")

function(stamp expected_regex)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${tree}/src -DVERSION=1.2.3 -DOUT=${out} -P "${script}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the stamp script failed (${rc}): ${err}")
  endif()
  file(READ "${out}" text)
  if(NOT text MATCHES "#define LOCKSTEP_BUILD \"(${expected_regex})\"")
    message(FATAL_ERROR "expected a build matching '${expected_regex}', got:\n${text}")
  endif()
  set(build "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# Outside a git checkout.
stamp("1\\.2\\.3 \\(no git revision\\)")

find_program(GIT git)
if(NOT GIT)
  message("SKIP: git is not installed; only the no-checkout case was tested")
  cmake_language(EXIT 77)
endif()
function(git)
  execute_process(COMMAND "${GIT}" -C "${tree}/src" ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} failed: ${e}")
  endif()
  set(git_out "${o}" PARENT_SCOPE)
endfunction()
file(WRITE "${tree}/src/a.txt" "one\n")
git(init -q)
git(-c user.name=t -c user.email=t@example.com add a.txt)
git(-c user.name=t -c user.email=t@example.com commit -q -m one)
git(rev-parse --short=12 HEAD)
set(rev "${git_out}")

# A clean checkout: its revision.
stamp("1\\.2\\.3 \\(git ${rev}\\)")

# An unchanged stamp keeps its file (its time stays, so nothing relinks).
file(TIMESTAMP "${out}" before "%s")
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
stamp("1\\.2\\.3 \\(git ${rev}\\)")
file(TIMESTAMP "${out}" after "%s")
if(NOT before STREQUAL after)
  message(FATAL_ERROR "an unchanged stamp was rewritten (${before} -> ${after})")
endif()

# Two different edits of one revision: two builds.
file(WRITE "${tree}/src/a.txt" "two\n")
stamp("1\\.2\\.3 \\(git ${rev}, modified [0-9a-f]+\\)")
set(first_edit "${build}")
file(WRITE "${tree}/src/a.txt" "three\n")
stamp("1\\.2\\.3 \\(git ${rev}, modified [0-9a-f]+\\)")
if(build STREQUAL first_edit)
  message(FATAL_ERROR "two different edits gave one build: ${build}")
endif()

# Back to the committed text: the clean build again.
file(WRITE "${tree}/src/a.txt" "one\n")
stamp("1\\.2\\.3 \\(git ${rev}\\)")
file(REMOVE_RECURSE "${tree}")
message("build stamps: no checkout, clean, unchanged, two edits, restored: as expected")
