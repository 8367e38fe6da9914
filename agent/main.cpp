// ddpscope-agent: see agent/run_agent.h and docs/CLI.md "ddpscope-agent".
#include <iostream>

#include "agent/run_agent.h"

int main(int argc, char** argv) {
  return ddpscope::agent::agentMain(argc, argv, std::cout, std::cerr);
}
