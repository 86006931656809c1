// Groups of subcommands filled from several files (synth, pack).
#include "cli/commands.h"

namespace ember::cli {

CLI::App* subcommand_group(CLI::App& app, const std::string& name, const std::string& description) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (sub->get_name() == name) return sub;
  CLI::App* group = app.add_subcommand(name, description);
  group->require_subcommand(1);
  return group;
}

}  // namespace ember::cli
