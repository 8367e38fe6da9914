# Warnings at zero: every target of the project gets these through ddpscope_warnings.
add_library(ddpscope_warnings INTERFACE)
target_compile_options(ddpscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough>)
# GCC 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports -Wrestrict inside libstdc++ for any literal
# prepended to a temporary std::string ("'" + std::string(w)): a false positive of that release
# (GCC bugs 105329 and 105651), so it is off for GCC 12 only.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ddpscope_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
option(DDPSCOPE_WERROR "Treat warnings as errors" ON)
if(DDPSCOPE_WERROR)
  target_compile_options(ddpscope_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
