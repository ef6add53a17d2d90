# Compile options shared by every lockstep target: warnings, sanitizers.
#
# lockstep_target_options(<target>) applies them. Third-party headers are
# included as SYSTEM by their imported targets, so -Werror only judges our code.

set(LOCKSTEP_CXX_WARNINGS
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # -Wmaybe-uninitialized is off: GCC 12 reports false positives inside
  # absl::InlinedVector moves (a known GCC 12 issue), not in our code.
  list(APPEND LOCKSTEP_CXX_WARNINGS -Wmisleading-indentation -Wduplicated-cond
       -Wlogical-op -Wuseless-cast -Wno-maybe-uninitialized)
endif()

set(LOCKSTEP_SANITIZER_FLAGS "")
if(LOCKSTEP_SANITIZER)
  set(LOCKSTEP_SANITIZER_FLAGS -fsanitize=${LOCKSTEP_SANITIZER} -fno-omit-frame-pointer
      -fno-sanitize-recover=all)
endif()

function(lockstep_target_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${LOCKSTEP_CXX_WARNINGS}>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${LOCKSTEP_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:CXX>:${LOCKSTEP_SANITIZER_FLAGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${LOCKSTEP_WERROR}>>:-Werror=all-warnings>)
  if(LOCKSTEP_SANITIZER)
    target_link_options(${target} PRIVATE ${LOCKSTEP_SANITIZER_FLAGS})
  endif()
endfunction()
