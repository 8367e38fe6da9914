// ddpscope-agent: see agent/run_agent.h and DESIGN.md "Command-line contracts".
#include <iostream>

#include "agent/run_agent.h"

int main(int argc, char** argv) {
  return ddpscope::agent::agentMain(argc, argv, std::cout, std::cerr);
}
