// guide's phases and outcome as text for people (mixprec/guide.h holds them as typed results).
// Rendering never fails and never changes the results.
#pragma once

#include <string>
#include <vector>

#include "mixprec/guide.h"

namespace mixprec {

// What a phase found, one fact per line (no trailing newlines).
std::vector<std::string> guide_phase_lines(const GuidePhase& phase);

// One paragraph: what to use and why (full mode: PASS/FAIL, the final model, its criterion and
// expected compute time; the ladder's follow-up; dry-run's recommendation; requantize's delta).
std::string guide_outcome(const GuideReport& report);

// The closing summary: one line per phase (name, status, seconds), the final model and config,
// and the outcome. Ends with a newline.
std::string guide_summary_text(const GuideReport& report);

}  // namespace mixprec
