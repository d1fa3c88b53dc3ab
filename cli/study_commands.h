// `ristretto study …`: the commands that read and write the coordinator's
// PostgreSQL store. The
// coordinator process does the work; these commands create studies, ask it
// to start or stop them (Store::SetStudyState), and report what it recorded.
//
// The database is named by `--db DSN` or the RISTRETTO_DB environment
// variable (a libpq connection string or URI). A DSN's password is never
// printed: messages show RedactDsn(dsn) and have the password masked.
//
// The operations (create, start, stop, export: ops/study.h) and the views
// (show, best, ls: cli/study_views.h) are elsewhere; this file is the
// commands' flags and their one call each.
#ifndef RISTRETTO_CLI_STUDY_COMMANDS_H_
#define RISTRETTO_CLI_STUDY_COMMANDS_H_

namespace ristretto::cli {

// `ristretto study create|start|stop|ls|show|best|export`; argv[first] is
// the verb. Returns the exit status (0 ok, 1 failure, 2 bad usage or input)
// and prints errors to stderr as "ristretto: <message>".
int RunStudyCommand(int argc, char** argv, int first);

}  // namespace ristretto::cli

#endif  // RISTRETTO_CLI_STUDY_COMMANDS_H_
