# Command-line tests of hostile input: every reader refuses, with exit 2 and a
# `stepcast: error:` line naming the file (and the JSON path where there is one), what a
# fuzzer or a slip of the hand can feed it -- a key given twice, nesting 100,000 deep, a
# number beyond double range, counts that an int would wrap, a FIFO, a device, a directory, a
# file over the size bound, absurd calibration measurements -- and an output that cannot be
# written is an error, never a silent success. Included from tests/CMakeLists.txt after
# tests/cli_tests.cmake (whose stepcast_cli_case this uses). Inputs: tests/data/hostile/,
# or made at test time under @TMP@ (run_cli_case.sh's fresh temporary folder) from the
# repository's valid inputs by tests/data/hostile/patch_json.py.

set(STEPCAST_HOSTILE ${CMAKE_CURRENT_LIST_DIR}/data/hostile)
set(STEPCAST_HOSTILE_GOOD ${CMAKE_CURRENT_LIST_DIR}/data/good/minimal.json)
set(STEPCAST_HOSTILE_RAW ${PROJECT_SOURCE_DIR}/calibrate/fit/testdata/synthetic_raw.json)
set(STEPCAST_HOSTILE_PATCH "python3 ${STEPCAST_HOSTILE}/patch_json.py")
set(S $<TARGET_FILE:stepcast>)

# stepcast_hostile_sh(<name> [RC <status>] [STDERR <fragment>...] [STDOUT <fragment>...]
#                     SCRIPT <sh script>): a case whose command is a shell script (to make
# a FIFO, a sparse file or a patched input first, or to redirect stdout); ${S} in the
# script is the stepcast binary.
function(stepcast_hostile_sh name)
  cmake_parse_arguments(ARG "" "RC;SCRIPT" "STDERR;STDOUT" ${ARGN})
  stepcast_cli_checks()
  add_test(NAME cli.${name}
           COMMAND bash ${STEPCAST_CLI_DRIVER} ${checks} -- sh -c "${ARG_SCRIPT}"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli TIMEOUT 60)
endfunction()

# ---- the strict JSON reader ----
stepcast_cli_case(hostile_duplicate_key RC 2
                  STDERR "duplicate_key.json: /training/micro_batch: key given twice"
                  ARGS predict ${STEPCAST_HOSTILE}/duplicate_key.json)
stepcast_cli_case(hostile_deep_200 RC 2
                  STDERR "deep_200.json: /model/0/0" "nesting deeper than 64"
                  ARGS predict ${STEPCAST_HOSTILE}/deep_200.json)
# 100,000 levels: a recursive parser or error message would overflow the stack (exit 139).
stepcast_hostile_sh(hostile_deep_100000 RC 2 STDERR "deep.json" "nesting deeper than 64"
                  SCRIPT "(head -c 100000 /dev/zero | tr '\\000' '[' && head -c 100000 /dev/zero | tr '\\000' ']') > @TMP@/deep.json && exec ${S} predict @TMP@/deep.json")
# Fuzz finding F1 (scenario-1.json: the same with 1e400).
stepcast_cli_case(hostile_number_1e309 RC 2
                  STDERR "number_1e309.json: /dataset/tokens: number out of range"
                  ARGS predict ${STEPCAST_HOSTILE}/number_1e309.json)

# ---- files that are not regular files, or too large ----
stepcast_cli_case(hostile_dev_zero RC 2 STDERR "/dev/zero: is not a regular file"
                  ARGS predict /dev/zero)
stepcast_hostile_sh(hostile_fifo RC 2 STDERR "fifo.json: is not a regular file"
                  SCRIPT "mkfifo @TMP@/fifo.json && exec ${S} predict @TMP@/fifo.json")
stepcast_cli_case(hostile_directory RC 2 STDERR "is a directory"
                  ARGS predict ${STEPCAST_HOSTILE})
# A sparse scenario of 200 MB, and a sparse record file of 2 GB: refused by their size
# (16 MiB for a JSON document, 1 GiB for records), before a byte is read.
stepcast_hostile_sh(hostile_file_too_large RC 2 STDERR "big.json" "over the 16777216 bytes"
                  SCRIPT "truncate -s 200M @TMP@/big.json && exec ${S} predict @TMP@/big.json")
stepcast_hostile_sh(hostile_records_too_large RC 2 STDERR "big.jsonl" "over the 1073741824 bytes"
                  SCRIPT "truncate -s 2G @TMP@/big.jsonl && exec ${S} validate @TMP@/big.jsonl")
stepcast_hostile_sh(hostile_fit_raw_fifo RC 2 STDERR "raw.json: is not a regular file"
                  SCRIPT "mkfifo @TMP@/raw.json && exec ${S} fit @TMP@/raw.json -o @TMP@/hw.json")
stepcast_cli_case(hostile_validate_calibration_dev_zero RC 2 STDERR "/dev/zero: is not a regular file"
                  ARGS validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl --calibration /dev/zero)

# ---- catalog counts an int would wrap: 2^32 + 2 must not read as 2 ----
# The catalogs come from $STEPCAST_DATA_DIR: a copy of the repository's with one file replaced.
set(copy_catalogs "mkdir -p @TMP@/d/topologies @TMP@/d/model && cp -r topologies/catalog @TMP@/d/topologies/ && cp -r model/catalog @TMP@/d/model/")
stepcast_hostile_sh(hostile_cluster_nodes_2pow32_plus_2 RC 2
                  STDERR "clusters.json: /clusters/0/nodes: expected an integer in 1..2147483647, got 4294967298"
                  SCRIPT "${copy_catalogs} && cp ${STEPCAST_HOSTILE}/clusters_nodes_2pow32_plus_2.json @TMP@/d/topologies/catalog/clusters.json && STEPCAST_DATA_DIR=@TMP@/d exec ${S} catalog clusters")
stepcast_hostile_sh(hostile_box_gpus_2pow32_plus_2 RC 2
                  STDERR "boxes.json: /boxes/0/gpus: expected an integer in 1..1024, got 4294967298"
                  SCRIPT "${copy_catalogs} && cp ${STEPCAST_HOSTILE}/boxes_gpus_2pow32_plus_2.json @TMP@/d/topologies/catalog/boxes.json && STEPCAST_DATA_DIR=@TMP@/d exec ${S} catalog boxes")

# ---- calibration: absurd measurements, and fit never writes what predict rejects ----
stepcast_hostile_sh(hostile_fit_gemm_1e300_s RC 2
                  STDERR "raw.json: /gemm/0/time_s_median: expected a number in [0, 10000]"
                  SCRIPT "${STEPCAST_HOSTILE_PATCH} ${STEPCAST_HOSTILE_RAW} @TMP@/raw.json /gemm/0/time_s_median=1e300 && exec ${S} fit @TMP@/raw.json -o @TMP@/hw.json")
stepcast_hostile_sh(hostile_fit_negative_bandwidth RC 2
                  STDERR "raw.json: /nccl/2/busbw_GBps"
                  SCRIPT "${STEPCAST_HOSTILE_PATCH} ${STEPCAST_HOSTILE_RAW} @TMP@/raw.json /nccl/2/busbw_GBps=-1 && exec ${S} fit @TMP@/raw.json -o @TMP@/hw.json")
# Fuzz finding F1 (raw_calibration-1.json had 1e400 at /gemm/0/time_s_median).
stepcast_hostile_sh(hostile_fit_1e309 RC 2
                  STDERR "raw.json: /memory/3/GBps: number out of range"
                  SCRIPT "${STEPCAST_HOSTILE_PATCH} ${STEPCAST_HOSTILE_RAW} @TMP@/raw.json /memory/3/GBps=1e309 && exec ${S} fit @TMP@/raw.json -o @TMP@/hw.json")
# Fuzz finding F1 (hardware-1.json of the fuzzers' findings): 1e400 in a hardware file.
stepcast_hostile_sh(hostile_hardware_file_1e400 RC 2
                  STDERR "hw.json: /machine/gpus/0/sm_count: number out of range"
                  SCRIPT "${STEPCAST_HOSTILE_PATCH} ${CMAKE_CURRENT_LIST_DIR}/data/good/synthetic_hardware.json @TMP@/hw.json /machine/gpus/0/sm_count=1e400 && exec ${S} validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl --calibration @TMP@/hw.json")
stepcast_hostile_sh(hostile_fit_duplicate_key RC 2
                  STDERR "raw.json: /format: key given twice"
                  SCRIPT "sed '0,/\"format\"/s//\"format\": \"x\", \"format\"/' ${STEPCAST_HOSTILE_RAW} > @TMP@/raw.json && exec ${S} fit @TMP@/raw.json -o @TMP@/hw.json")
# A 1 GiB host copy taking 2.8 hours: each row is within bounds, the fitted bandwidth is
# not; fit refuses (naming the raw file) and writes nothing (exit 99 if it wrote the file).
stepcast_hostile_sh(hostile_fit_unphysical_result_writes_nothing RC 2
                  STDERR "raw.json: the fit gives a hardware file stepcast cannot use" "/memory/h2d_GBps"
                  SCRIPT "${STEPCAST_HOSTILE_PATCH} ${STEPCAST_HOSTILE_RAW} @TMP@/raw.json /memory/4/time_s_median=9999 && ${S} fit @TMP@/raw.json -o @TMP@/hw.json || (rc=$? && test ! -e @TMP@/hw.json && exit $rc || exit 99)")
# What fit writes, predict reads: the calibrated scenario of tests/data/good on a fresh fit.
stepcast_hostile_sh(hostile_fit_output_reads_back STDOUT "Step time" "calibration"
                  SCRIPT "${S} fit ${STEPCAST_HOSTILE_RAW} -o @TMP@/synthetic_hardware.json > /dev/null && cp ${CMAKE_CURRENT_LIST_DIR}/data/good/calibrated.json @TMP@/ && exec ${S} predict @TMP@/calibrated.json")

# ---- outputs that cannot be written: exit 2 with a message, never 0 ----
stepcast_hostile_sh(hostile_stdout_dev_full RC 2 STDERR "cannot write the report to standard output"
                  SCRIPT "exec ${S} predict ${STEPCAST_HOSTILE_GOOD} > /dev/full")
stepcast_hostile_sh(hostile_stdout_dev_full_json RC 2 STDERR "standard output"
                  SCRIPT "exec ${S} catalog --json > /dev/full")
stepcast_hostile_sh(hostile_stdout_dev_full_help RC 2 STDERR "standard output"
                  SCRIPT "exec ${S} --help > /dev/full")
stepcast_cli_case(hostile_trace_dev_full RC 2 STDERR "cannot write the trace file /dev/full"
                  ARGS predict ${STEPCAST_HOSTILE_GOOD} --trace /dev/full)
stepcast_cli_case(hostile_fit_output_dev_full RC 2 STDERR "cannot write the hardware file /dev/full"
                  ARGS fit ${STEPCAST_HOSTILE_RAW} -o /dev/full)
stepcast_hostile_sh(hostile_fit_stdout_dev_full RC 2 STDERR "standard output"
                  SCRIPT "exec ${S} fit ${STEPCAST_HOSTILE_RAW} -o @TMP@/hw.json > /dev/full")
