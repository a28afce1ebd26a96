# `stepcast validate` as a gate (validate/gate.hpp): exit 0 below the limits, 3 above them
# with each limit crossed named on stderr, 2 for bad limits (the option or the file and JSON
# path named); and its JUnit report, parsed by a real XML parser (tests/junit_check.py).
# Included from tests/CMakeLists.txt after cli_tests.cmake (stepcast_cli_case). The records,
# tests/data/gate/runs.jsonl: five compared, |error| about 0.9, 1.2, 3.5, 13.6 and 24.6%
# (median 3.5, p90 20.2), one skipped, one of low trust.
set(gate_data ${CMAKE_CURRENT_LIST_DIR}/data/gate)
set(gate_runs ${gate_data}/runs.jsonl)

# Both sides of each limit given as options.
stepcast_cli_case(gate_options_pass RC 0
                  STDERR "Gate (command line): passed, 6 checks" "ok    all: median |error|"
                  ARGS validate ${gate_runs} --max-median-error 10 --max-p90-error 30% --max-record-error 30
                       --min-compared 5 --min-compared-share 80 --min-ordering 50)
stepcast_cli_case(gate_median_crossed RC 3
                  STDERR "Gate (command line): FAILED 1 of 1 checks" "FAIL  all: median |error|" "> 2%, by "
                  ARGS validate ${gate_runs} --max-median-error 2)
stepcast_cli_case(gate_p90_crossed RC 3 STDERR "FAIL  all: p90 |error|" "> 15%, by "
                  ARGS validate ${gate_runs} --json --max-p90-error 15)
stepcast_cli_case(gate_record_crossed RC 3
                  STDERR "FAIL  all: max |error|" "> 20%, by " "1 of 5 records beyond, worst llmfoundry-a10040-1b-s2048-g32-bf16"
                  ARGS validate ${gate_runs} --max-record-error 20)
stepcast_cli_case(gate_compared_crossed RC 3
                  STDERR "FAIL  all: records compared 5 < 6, short by 1" "FAIL  all: share compared 83.33% < 90%, by 6.67 points"
                  ARGS validate ${gate_runs} --min-compared 6 --min-compared-share 90%)
# A gate file: overall, per source and per GPU limits; an option replaces the file's overall value.
stepcast_cli_case(gate_file_pass RC 0 STDERR "gate.json): passed"
                  "ok    source: NVIDIA/Megatron-LM · README.md (image images/cases_april2021.png): max |error|"
                  "ok    gpu: h100-sxm5-80gb: median |error|"
                  ARGS validate ${gate_runs} --gate ${gate_data}/gate.json)
stepcast_cli_case(gate_file_gpu_crossed RC 3
                  STDERR "FAIL  gpu: a100-sxm4-40gb: max |error|" "> 10%, by " "worst llmfoundry-a10040-1b-s2048-g32-bf16"
                  ARGS validate ${gate_runs} --gate ${gate_data}/gate_a100_40gb.json)
stepcast_cli_case(gate_option_over_file RC 3 STDERR "gate.json and the command line): FAILED 1 of" "> 1%, by "
                  ARGS validate ${gate_runs} --gate ${gate_data}/gate.json --max-median-error 1)
# Bad limits: exit 2, the option or the file and JSON path named with what was expected.
stepcast_cli_case(gate_bad_percentage RC 2 STDERR "--max-median-error" "expected a percentage from 0 to"
                  ARGS validate ${gate_runs} --max-median-error eight)
stepcast_cli_case(gate_share_over_100 RC 2 STDERR "--min-compared-share" "expected a percentage from 0 to 100"
                  ARGS validate ${gate_runs} --min-compared-share 120)
stepcast_cli_case(gate_bad_file RC 2
                  STDERR "bad_gate.json: /median_error_pct: unknown key" "bad_gate.json: /p90_abs_error_pct:"
                         "bad_gate.json: /ordering_accuracy:" "3 problems in"
                  ARGS validate ${gate_runs} --gate ${gate_data}/bad_gate.json)
stepcast_cli_case(gate_unknown_gpu RC 2
                  STDERR "unknown_gpu.json: /gpus/a100-sxm4-40g: no record has this gpu" "did you mean \"a100-sxm4-40gb\""
                  ARGS validate ${gate_runs} --gate ${gate_data}/unknown_gpu.json)
stepcast_cli_case(gate_missing_file RC 2 STDERR "no such gate file: no-such-gate.json"
                  ARGS validate ${gate_runs} --gate no-such-gate.json)
stepcast_cli_case(gate_junit_unwritable RC 2 STDERR "cannot write the JUnit report" "no-such-folder/r.xml"
                  ARGS validate ${gate_runs} --junit @TMP@/no-such-folder/r.xml)
stepcast_cli_case(gate_junit_empty_name RC 2 STDERR "--junit"
                  ARGS validate ${gate_runs} --junit "")
stepcast_cli_case(validate_help_gate RC 0
                  STDOUT "--gate FILE" "--max-median-error PCT" "--max-record-error PCT" "--min-compared N"
                         "--min-compared-share PCT" "--min-ordering PCT" "--junit FILE" "\"min_compared_fraction\""
                         "  3  the gate"
                  ARGS validate --help)

# The JUnit XML through Python's xml.etree: counts of tests, failures and skipped against the
# records' own statuses and errors, one case per record, on both sides of the gate.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli.gate_junit_xml
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/junit_check.py $<TARGET_FILE:stepcast> ${gate_runs})
  set_tests_properties(cli.gate_junit_xml PROPERTIES LABELS cli TIMEOUT 120)
endif()
