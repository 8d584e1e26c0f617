#pragma once
// The subcommands of the ibbcast tool; each returns the process exit code.

namespace ibbcast::tool {

int cmd_demo(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_stage(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_sim(int argc, char** argv);
int cmd_plot(int argc, char** argv);
int cmd_config_doc(int argc, char** argv);

}  // namespace ibbcast::tool
