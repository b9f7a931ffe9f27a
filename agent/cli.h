// agent/cli.h: the edgesync command line (CLI11): subcommands gateway,
// region, query, feed, status and config check.
#ifndef EDGESYNC_AGENT_CLI_H_
#define EDGESYNC_AGENT_CLI_H_

namespace edgesync {

// Runs the program; returns the process exit code.
int RunCli(int argc, char** argv);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_CLI_H_
