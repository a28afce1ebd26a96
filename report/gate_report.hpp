/// \file
/// Views of `stepcast validate`'s gate (validate/gate.hpp): the short summary that names
/// each limit crossed and by how much, and the JUnit XML report CI systems read.
#pragma once

#include "validate/gate.hpp"
#include "validate/validation.hpp"

#include <string>
#include <vector>

namespace stepcast::cli {

/// "Gate (<from>): passed, N checks" or "Gate (<from>): FAILED k of N checks", then one line
/// per check: `ok`/`FAIL`, the group, the figure against its limit and, when crossed, by how
/// much (percentage points, records) and, for a record tolerance, how many records exceed it
/// and the worst one. `from` says where the limits came from (a file, the command line).
std::string gate_text(const GateResult& result, const std::string& from);

/// JUnit XML: <testsuites> with one <testsuite> per source (records in their order) holding
/// one <testcase classname="<source>" name="<id>"> per record: a <failure> when the record's
/// |error| exceeds its tolerance (message with predicted, measured, error and tolerance),
/// <skipped message="<reason>"/> for a skipped record and for a low-trust one (kept out of
/// the summaries and the gate). With a gate (`gate` not null) a last <testsuite name="stepcast gate">
/// holds one test case per check, failed when the limit is crossed. Counts (tests, failures,
/// errors, skipped) on every suite and on the whole.
std::string validate_junit(const std::vector<ValidationRow>& rows, const GateResult* gate);

/// `text` with XML's special characters escaped (& < > " ') and the characters XML 1.0
/// cannot hold (controls other than tab, newline and carriage return; U+FFFE, U+FFFF)
/// replaced by U+FFFD. In an `attribute` value tab and newline are escaped too (a parser
/// would turn them into spaces); in element text they stay.
std::string xml_escape(const std::string& text, bool attribute = true);

}  // namespace stepcast::cli
