// edgesync: the program. Parses the command line and hands over to a role.
#include "agent/cli.h"

int main(int argc, char** argv) { return edgesync::RunCli(argc, argv); }
