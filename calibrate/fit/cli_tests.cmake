# Command-line tests of `stepcast fit`, run through tests/run_cli_case.sh (exit status,
# stdout/stderr fragments, the written hardware file). Included from
# calibrate/fit/CMakeLists.txt.
#
# This folder is configured before cli/ (the `stepcast` target) and tests/ (the
# stepcast_cli_case helper, which cannot check a written file anyway), so the tests are
# declared by a call deferred to the end of the top-level CMakeLists.txt, when the target
# exists; a configuration without the command (none yet) gets none of these tests.

function(stepcast_fit_cli_tests)
  # Runs in the top-level directory's scope: paths come from where this file lives.
  set(STEPCAST_FIT_TESTDATA ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/testdata)
  set(driver ${PROJECT_SOURCE_DIR}/tests/run_cli_case.sh)
  if(NOT TARGET stepcast OR NOT EXISTS ${driver})
    message(STATUS "stepcast: no `stepcast` command or no ${driver}; fit CLI tests skipped")
    return()
  endif()
  set(raw ${STEPCAST_FIT_TESTDATA}/synthetic_raw.json)
  set(hw_keys format,machine,gpu,source,gemm,memory,collectives,model_box,excluded_rows)

  # stepcast_fit_case(<name> <run_cli_case.sh checks>... -- <stepcast arguments>...)
  function(stepcast_fit_case name)
    add_test(NAME cli.fit_${name}
             COMMAND bash ${driver} ${ARGN}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli.fit_${name} PROPERTIES LABELS cli TIMEOUT 120)
  endfunction()

  # The synthetic file's known parameters come back (make_synthetic.py): bf16
  # max_fraction 0.72 and half_flops 3 GFLOP, all-reduce latency 12 µs and busbw
  # 180 GB/s x 2(8-1)/8 = 315 GB/s; 2 failed rows left out; the 2-node run has no model.
  stepcast_fit_case(synthetic_text
    --stdout "GEMM efficiency" --stdout "0.7200" --stdout "3.000" --stdout "12.00"
    --stdout "315.0" --stdout "dgx-h100" --stdout "rows left out (check not \"ok\"): 2"
    --stdout "several nodes" --stdout "Wrote"
    --file-json @TMP@/hw.json --file-json-keys ${hw_keys}
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/hw.json)
  stepcast_fit_case(synthetic_json
    --json-keys output_file,gpu_mapped_from,hardware,excluded,not_fitted,warnings
    --stdout "\"max_fraction\": 0.72" --stdout "\"excluded_rows\": 2"
    --file-json @TMP@/hw.json --file-json-keys ${hw_keys}
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/hw.json --json)
  stepcast_fit_case(gpu_option
    --stdout "from --gpu h100-sxm5-80gb"
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/hw.json --gpu h100-sxm5-80gb)
  stepcast_fit_case(help
    --stdout "Usage: stepcast fit" --stdout "stepcast-calibrate-raw-v1"
    --stdout "stepcast-hardware-v1" --stdout "Exit codes:" --stdout "Examples:"
    -- $<TARGET_FILE:stepcast> fit --help)

  # The kernel model's synthetic file (make_synthetic.py, synthetic_kernel_raw.json): bf16
  # ceiling 700 TFLOP/s through tile and wave quantization on 132 SMs, memory-bound median
  # 2400 of 3350 GB/s = 71.6%, launch 4 µs, eager ops 12 / 30 µs, GEMM 10% slower beside an
  # all-reduce. synthetic_kernel_hardware.json is this command's output, committed.
  stepcast_fit_case(kernel_synthetic
    --stdout "GEMM bf16: ceiling 700.0 TFLOP/s" --stdout "71.6% -> memory_efficiency"
    --stdout "launch: 4.00 µs -> launch_s" --stdout "eager op backward: 30.00 µs" --stdout "GEMM 10.0% slower"
    --stdout "attention flash2 d=128 causal forward: TFLOP/s by seq 512:300 1024:400 2048:450 4096:480"
    --file-json @TMP@/hw.json --file-json-keys ${hw_keys},kernel_model
    -- $<TARGET_FILE:stepcast> fit ${STEPCAST_FIT_TESTDATA}/synthetic_kernel_raw.json -o @TMP@/hw.json)
  # The committed hardware file is what `fit` writes today (regenerate it with the command).
  add_test(NAME cli.fit_kernel_hardware_current
           COMMAND sh -c "\"$0\" fit calibrate/fit/testdata/synthetic_kernel_raw.json -o \"$1\" >/dev/null && cmp \"$1\" calibrate/fit/testdata/synthetic_kernel_hardware.json"
             $<TARGET_FILE:stepcast> ${CMAKE_CURRENT_BINARY_DIR}/synthetic_kernel_hardware.json
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.fit_kernel_hardware_current PROPERTIES LABELS cli)
  # The H100 calibration's hardware file is what `fit` makes of its raw file today.
  add_test(NAME cli.fit_h100_x1_hardware_current
           COMMAND sh -c "\"$0\" fit calibrate/data/h100-x1/raw.json -o \"$1\" >/dev/null && cmp \"$1\" calibrate/data/h100-x1/hardware.json"
             $<TARGET_FILE:stepcast> ${CMAKE_CURRENT_BINARY_DIR}/h100_x1_hardware.json
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.fit_h100_x1_hardware_current PROPERTIES LABELS cli)
  # predict --calibration: the file's rates replace the catalog's, each saying where from
  # (GEMM and attention rates then scaled in-step as any isolated rate, model/catalog/in_step.json).
  set(kernel_hw ${STEPCAST_FIT_TESTDATA}/synthetic_kernel_hardware.json)
  stepcast_fit_case(predict_calibration
    --stdout "tile and wave quantized: calibration file" --stdout "attention: flash2 measured: calibration file"
    --stdout "memory-bound kernels reach 72% of 3350 GB/s (calibration file"
    --stdout "compute runs 10% slower while a collective runs: calibration file"
    --stdout "12.0 / 30.0 µs per eager op forward / backward: calibration file"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xh100.json --calibration ${kernel_hw})
  stepcast_fit_case(predict_calibration_other_gpu --rc 2 --stderr "fitted for h100-sxm5-80gb, but dgx-a100 holds"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xa100.json --calibration ${kernel_hw})
  stepcast_fit_case(predict_calibration_missing --rc 2 --stderr "no such hardware file: no-such-hw.json"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xh100.json --calibration no-such-hw.json)

  # Bad input: exit 2 with the file and the JSON path (or the option) named.
  stepcast_fit_case(bad_format --rc 2
    --stderr "bad_format.json: /format: expected \"stepcast-calibrate-raw-v1\""
    -- $<TARGET_FILE:stepcast> fit ${STEPCAST_FIT_TESTDATA}/bad_format.json -o @TMP@/hw.json)
  stepcast_fit_case(bad_unknown_key --rc 2
    --stderr "bad_unknown_key.json: /nccl/3/busbw: unknown key"
    -- $<TARGET_FILE:stepcast> fit ${STEPCAST_FIT_TESTDATA}/bad_unknown_key.json -o @TMP@/hw.json)
  stepcast_fit_case(missing_file --rc 2 --stderr "no-such-raw.json"
    -- $<TARGET_FILE:stepcast> fit no-such-raw.json -o @TMP@/hw.json)
  stepcast_fit_case(unknown_gpu --rc 2 --stderr "--gpu h101"
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/hw.json --gpu h101)
  stepcast_fit_case(box_without_that_gpu --rc 2 --stderr "--box dgx-a100 holds"
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/hw.json --box dgx-a100)
  stepcast_fit_case(no_output_option --rc 2 --stderr "-o"
    -- $<TARGET_FILE:stepcast> fit ${raw})
  stepcast_fit_case(unwritable_output --rc 2 --stderr "cannot write the hardware file"
    -- $<TARGET_FILE:stepcast> fit ${raw} -o @TMP@/no-such-dir/hw.json)
  stepcast_fit_case(no_raw --rc 2 --stderr "RAW (a raw calibration file) is required"
    -- $<TARGET_FILE:stepcast> fit -o @TMP@/hw.json)

  # `stepcast fit in-step` (calibrate/fit/in_step_fit.hpp): synthetic probe records measured
  # at stepcast's own isolated GEMM and attention times / 0.8 and / 0.9 give back 0.8 and 0.9
  # within 1e-6 (probe_round_trip.py builds them from the current model, then fits them).
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    add_test(NAME cli.fit_in_step_round_trip
             COMMAND ${Python3_EXECUTABLE} ${STEPCAST_FIT_TESTDATA}/probe_round_trip.py $<TARGET_FILE:stepcast>
                     ${CMAKE_CURRENT_BINARY_DIR}/fit_in_step_round_trip
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli.fit_in_step_round_trip PROPERTIES LABELS cli TIMEOUT 120)
  endif()
  stepcast_fit_case(in_step_help
    --stdout "Usage: stepcast fit in-step" --stdout "gemm_fraction      = isolated GEMM time / measured"
    --stdout "--calibration" --stdout "--in-step FILE" --stdout "Exit codes:"
    -- $<TARGET_FILE:stepcast> fit in-step --help)
  stepcast_fit_case(in_step_template
    --stdout "gemm_fraction:" --stdout "attention_fraction:" --stdout "over 2 records" --stdout "Wrote"
    --file-json @TMP@/in_step.json --file-json-keys about,gemm_fraction,attention_fraction,fitted_on,method,runs
    -- $<TARGET_FILE:stepcast> fit in-step ${STEPCAST_FIT_TESTDATA}/synthetic_probe_template.jsonl -o @TMP@/in_step.json)
  stepcast_fit_case(in_step_bad_record --rc 2
    --stderr "bad_probe_runs.jsonl:1: /measured/secondary: measured.secondary gemm_time_s"
    -- $<TARGET_FILE:stepcast> fit in-step ${STEPCAST_FIT_TESTDATA}/bad_probe_runs.jsonl -o @TMP@/in_step.json)
  stepcast_fit_case(in_step_no_kernel_times --rc 2
    --stderr "probe_runs_without_kernel_times.jsonl: no record has a GEMM time"
    -- $<TARGET_FILE:stepcast> fit in-step ${STEPCAST_FIT_TESTDATA}/probe_runs_without_kernel_times.jsonl
       -o @TMP@/in_step.json)
  stepcast_fit_case(in_step_missing_runs --rc 2 --stderr "no such file or folder: no-such-runs.jsonl"
    -- $<TARGET_FILE:stepcast> fit in-step no-such-runs.jsonl -o @TMP@/in_step.json)
  stepcast_fit_case(in_step_calibration_other_gpu --rc 2 --stderr "was fitted for h100-sxm5-80gb"
    -- $<TARGET_FILE:stepcast> fit in-step ${STEPCAST_FIT_TESTDATA}/probe_runs_other_gpu.jsonl
       -o @TMP@/in_step.json --calibration ${kernel_hw})
  # predict / validate --in-step: the file's fractions replace the catalog's, and say so.
  set(in_step ${STEPCAST_FIT_TESTDATA}/synthetic_in_step.json)
  stepcast_fit_case(predict_in_step
    --stdout "x 0.800 in-step (${in_step}, fitted on stepcast"
    --stdout "x 0.900 in-step (${in_step}" --stdout "GEMMs keep 80.0% and attention 90.0%"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xh100.json --in-step ${in_step})
  stepcast_fit_case(predict_in_step_bad --rc 2
    --stderr "bad_in_step.json: /gemm_fraction: expected a number in (0, 1" --stderr "got 1.25"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xh100.json
       --in-step ${STEPCAST_FIT_TESTDATA}/bad_in_step.json)
  stepcast_fit_case(predict_in_step_missing --rc 2 --stderr "no such in-step file: no-such-in-step.json"
    -- $<TARGET_FILE:stepcast> predict scenarios/seeds/lightning-ddp-3xh100.json --in-step no-such-in-step.json)
  stepcast_fit_case(validate_in_step --stdout "stepcast-probe-synthetic-gpt2-xl"
    --stdout "never use what was fitted on it: ${in_step})"
    -- $<TARGET_FILE:stepcast> validate ${STEPCAST_FIT_TESTDATA}/synthetic_probe_template.jsonl --in-step ${in_step})
  stepcast_fit_case(validate_in_step_bad --rc 2 --stderr "bad_in_step.json: /gemm_fraction"
    -- $<TARGET_FILE:stepcast> validate ${STEPCAST_FIT_TESTDATA}/synthetic_probe_template.jsonl
       --in-step ${STEPCAST_FIT_TESTDATA}/bad_in_step.json)
  # `stepcast fit generation` (validate/generation_fit.hpp) on 6 published records
  # (generation_runs.jsonl, copied unchanged from data/validation/runs.jsonl): 3 llm-foundry
  # and 2 Megatron-LM A100 runs are fitted (the H100 run is another generation); the fit
  # without each source uses the other's records only.
  set(gen_runs ${STEPCAST_FIT_TESTDATA}/generation_runs.jsonl)
  stepcast_fit_case(generation_fit
    --stdout "ampere GEMM in-step fraction" --stdout "fitted without source"
    --stdout "mosaicml/llm-foundry · scripts/train/benchmarking/README.md" --stdout "on every source: 0.825"
    --file-json @TMP@/in_step.json
    --file-json-keys about,gemm_fraction,attention_fraction,fitted_on,method,generations
    -- $<TARGET_FILE:stepcast> fit generation ${gen_runs} --arch ampere -o @TMP@/in_step.json)
  stepcast_fit_case(generation_help
    --stdout "Usage: stepcast fit generation" --stdout "f = argmin over the grid of the median |error|"
    --stdout "--refine" --stdout "Exit codes:"
    -- $<TARGET_FILE:stepcast> fit generation --help)
  stepcast_fit_case(generation_bad_arch --rc 2 --stderr "--arch"
    -- $<TARGET_FILE:stepcast> fit generation ${gen_runs} --arch amperes -o @TMP@/in_step.json)
  stepcast_fit_case(generation_bad_range --rc 2 --stderr "must lie in (0, 1"
    -- $<TARGET_FILE:stepcast> fit generation ${gen_runs} --arch ampere --to 1.2 -o @TMP@/in_step.json)
  stepcast_fit_case(generation_no_records --rc 2 --stderr "no record of this GPU generation was compared"
    -- $<TARGET_FILE:stepcast> fit generation ${gen_runs} --arch blackwell -o @TMP@/in_step.json)
  stepcast_fit_case(generation_missing_runs --rc 2 --stderr "no such file or folder: no-such-runs.jsonl"
    -- $<TARGET_FILE:stepcast> fit generation no-such-runs.jsonl --arch ampere -o @TMP@/in_step.json)
  stepcast_fit_case(generation_bad_in_step --rc 2 --stderr "bad_in_step.json: /gemm_fraction"
    -- $<TARGET_FILE:stepcast> fit generation ${gen_runs} --arch ampere -o @TMP@/in_step.json
       --in-step ${STEPCAST_FIT_TESTDATA}/bad_in_step.json)
endfunction()

cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL stepcast_fit_cli_tests)
