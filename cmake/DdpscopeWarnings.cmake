# Warnings at zero: every target of the project gets these through ddpscope_warnings.
add_library(ddpscope_warnings INTERFACE)
target_compile_options(ddpscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough>)
option(DDPSCOPE_WERROR "Treat warnings as errors" ON)
if(DDPSCOPE_WERROR)
  target_compile_options(ddpscope_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
