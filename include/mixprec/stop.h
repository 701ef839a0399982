// Stopping a run from outside: the CLI's SIGINT/SIGTERM handler requests a stop; the runs made
// of steps (explore and the searches under guide, dry-run rows, ladder rungs) poll it between
// steps. The step in progress finishes and is written (ledger line, best model and config),
// then the run throws Error kCancelled, which the CLI turns into exit code 130.
//
// request_stop() is async-signal-safe (one lock-free atomic store). Nothing else in the
// library reads the request: a run that has no steps finishes as usual.
#pragma once

#include <string>

namespace mixprec {

// `signal_number` is kept for the message ("SIGINT", "SIGTERM"); any nonzero value stops.
void request_stop(int signal_number) noexcept;
// 0 when no stop was requested, else the signal number given.
int stop_requested() noexcept;
// Forgets a request (tests; a CLI runs one command per process).
void clear_stop_request() noexcept;

// Throws Error kCancelled naming `file` when a stop was requested; `what` says what is kept
// ("the best assignment so far is in final.onnx").
void throw_if_stopped(const std::string& file, const std::string& what);

}  // namespace mixprec
