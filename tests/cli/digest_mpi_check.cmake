# The digest of a real three-process MPI job is, byte for byte, the digest of one process: a
# simulated run of five ranks (so the files split unevenly), digested both ways.
# cmake -DCLI=... -DAGENT=... -DMPIEXEC=... -DDIR=... -P digest_mpi_check.cmake
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${AGENT} --backend sim --world-size 5 --steps 3 --straggler-rank 3
                        --straggler-slowdown 1.4 --out ${DIR}/run
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the agent failed (${rc})")
endif()
execute_process(COMMAND ${CLI} digest --out ${DIR}/one.json ${DIR}/run RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "digest in one process failed (${rc})")
endif()
execute_process(COMMAND ${MPIEXEC} -n 3 --oversubscribe ${CLI} digest --out ${DIR}/three.json
                        ${DIR}/run
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "digest under mpiexec failed (${rc}): ${err}")
endif()
if(NOT err MATCHES "3 processes")
  message(FATAL_ERROR "the digest was not written by a job of three processes: ${err}")
endif()
file(READ ${DIR}/one.json one)
file(READ ${DIR}/three.json three)
if(NOT one STREQUAL three)
  message(FATAL_ERROR "the digests of one and of three processes differ")
endif()
file(REMOVE_RECURSE ${DIR})
