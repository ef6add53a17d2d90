# Checks that every #include points down the layers (docs/ARCHITECTURE.md):
#
#   cli -> hw -> faults -> sim -> kernels/protocol -> dispatch
#   (hw also uses kernels/cuda, which uses kernels/protocol and dispatch)
#
# A layer may include its own files and those of the layers below it; quoted
# includes are project headers, angle includes are the standard library or a
# dependency. dispatch/ is the product core: besides itself it may include only
# Abseil and the standard library. tests/, bench/ and tools/ sit on top.
# Inside sim/, its concept folders are ordered the same way (sim_folders below).
#
#   cmake -DSOURCE_DIR=<repo> -P cmake/CheckIncludeLayers.cmake
# exits non-zero and lists every include that points up.

cmake_policy(VERSION 3.25)

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "pass -DSOURCE_DIR=<the repository root>")
endif()

# layer -> the project folders its files may include from.
set(allowed_dispatch "dispatch")
set(allowed_kernels/protocol "kernels/protocol;dispatch")
set(allowed_kernels/cuda "kernels/cuda;kernels/protocol;dispatch")
set(allowed_sim "sim;kernels/protocol;dispatch")
set(allowed_faults "faults;sim;kernels/protocol;dispatch")
set(allowed_hw "hw;faults;sim;kernels/cuda;kernels/protocol;dispatch")
set(allowed_cli "cli;hw;faults;sim;kernels/cuda;kernels/protocol;dispatch")
set(layers dispatch kernels/protocol kernels/cuda sim faults hw cli)

# Inside sim/ the concept folders are layers too, from the bottom up
# (docs/ARCHITECTURE.md): each may include its own folder and those below it,
# and none but report/ the top-level files (simulation.h, sim_run.h, ...),
# which assemble them.
set(sim_folders scenario replica runtime memory report)
list(FIND sim_folders report sim_report)

# Folders a quoted include can name (anything else is a dependency's header
# found through its own include path, e.g. "absl/..." or "nlohmann/...").
set(project_folders dispatch kernels sim faults hw cli tests bench tools)

set(violations "")
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE files LIST_DIRECTORIES false
    "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cc"
    "${SOURCE_DIR}/${layer}/*.cu" "${SOURCE_DIR}/${layer}/*.cuh")
  foreach(file IN LISTS files)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line IN LISTS lines)
      string(REGEX MATCH "[\"<]([^\">]+)[\">]" _ "${line}")
      set(target "${CMAKE_MATCH_1}")
      string(REGEX MATCH "^[^/]+" top "${target}")
      if(line MATCHES "#[ \t]*include[ \t]*\"" AND top IN_LIST project_folders)
        set(ok FALSE)
        foreach(prefix IN LISTS allowed_${layer})
          string(LENGTH "${prefix}/" n)
          string(SUBSTRING "${target}" 0 ${n} head)
          if(head STREQUAL "${prefix}/")
            set(ok TRUE)
          endif()
        endforeach()
        if(NOT ok)
          list(APPEND violations "${rel}: includes \"${target}\", above layer ${layer}")
        elseif(layer STREQUAL "sim" AND top STREQUAL "sim")
          # The including file's sim/ folder and the included one's ("" for
          # a top-level file), by their index in sim_folders.
          string(REGEX MATCH "^sim/([^/]+)/" _ "${rel}")
          list(FIND sim_folders "${CMAKE_MATCH_1}" from)
          string(REGEX MATCH "^sim/([^/]+)/" _ "${target}")
          list(FIND sim_folders "${CMAKE_MATCH_1}" to)
          if(from GREATER_EQUAL 0 AND to LESS 0 AND NOT from EQUAL sim_report)
            list(APPEND violations
                 "${rel}: includes \"${target}\", a top-level sim/ file, from below it")
          elseif(from GREATER_EQUAL 0 AND to GREATER from)
            list(GET sim_folders ${to} above)
            list(GET sim_folders ${from} here)
            list(APPEND violations
                 "${rel}: includes \"${target}\", but sim/${above}/ is above sim/${here}/")
          endif()
        endif()
      elseif(layer STREQUAL "dispatch" AND NOT top STREQUAL "absl" AND target MATCHES "[/.]")
        # dispatch/: Abseil and the standard library only (standard headers
        # have neither a folder nor an extension).
        list(APPEND violations
             "${rel}: includes ${target}, but dispatch/ uses only Abseil and the standard library")
      endif()
    endforeach()
  endforeach()
endforeach()

list(LENGTH violations count)
if(count GREATER 0)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "${count} include(s) point up the layers:\n  ${text}")
endif()
message(STATUS "include layers: every include points down")
