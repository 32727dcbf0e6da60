# Builds TARGET in BINARY_DIR; passes when the build fails with EXPECTED in its output, or, for an
# empty EXPECTED (the harness's own control), when the build succeeds.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} --target ${TARGET}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECTED STREQUAL "")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "control program ${TARGET} failed to build:\n${out}${err}")
  endif()
  return()
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but it must not")
endif()
string(FIND "${out}${err}" "${EXPECTED}" position)
if(position EQUAL -1)
  message(FATAL_ERROR "${TARGET} failed to compile, but without '${EXPECTED}':\n${out}${err}")
endif()
message(STATUS "${TARGET} failed to compile as expected ('${EXPECTED}')")
