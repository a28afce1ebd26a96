# Command-line tests: run the real `stepcast` binary through tests/run_cli_case.sh and check
# its exit status, its stderr (the file name and JSON path of every input error) and, where
# it prints JSON, that the JSON parses and has the required keys. Included from
# tests/CMakeLists.txt. Bad scenarios live in tests/data/bad/ (each valid but for one
# defect, named by its file name and its "description"); tests/data/good/minimal.json is
# the valid scenario they were made from.

set(STEPCAST_CLI_DRIVER ${CMAKE_CURRENT_LIST_DIR}/run_cli_case.sh)
set(STEPCAST_CLI_BAD ${CMAKE_CURRENT_LIST_DIR}/data/bad)
set(STEPCAST_CLI_GOOD ${CMAKE_CURRENT_LIST_DIR}/data/good/minimal.json)

# stepcast_cli_case(<name> [RC <status>] [STDERR <fragment>...] [STDOUT <fragment>...]
#                   [JSON] [JSON_KEYS <key>...] ARGS <stepcast arguments>...)
# stepcast_cli_checks(): the driver's flags for a case's parsed ARG_RC, ARG_STDERR and
# ARG_STDOUT, in `checks` (a macro, so it reads and sets the caller's variables).
macro(stepcast_cli_checks)
  set(checks)
  if(DEFINED ARG_RC)
    list(APPEND checks --rc ${ARG_RC})
  endif()
  foreach(fragment IN LISTS ARG_STDERR)
    list(APPEND checks --stderr ${fragment})
  endforeach()
  foreach(fragment IN LISTS ARG_STDOUT)
    list(APPEND checks --stdout ${fragment})
  endforeach()
endmacro()

function(stepcast_cli_case name)
  cmake_parse_arguments(ARG "JSON" "RC" "STDERR;STDOUT;JSON_KEYS;ARGS" ${ARGN})
  stepcast_cli_checks()
  if(ARG_JSON)
    list(APPEND checks --json)
  endif()
  if(ARG_JSON_KEYS)
    string(REPLACE ";" "," keys "${ARG_JSON_KEYS}")
    list(APPEND checks --json-keys ${keys})
  endif()
  add_test(NAME cli.${name}
           COMMAND bash ${STEPCAST_CLI_DRIVER} ${checks} -- $<TARGET_FILE:stepcast> ${ARG_ARGS}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli TIMEOUT 120)
endfunction()

# ---- help, version, catalog ----
stepcast_cli_case(help STDOUT "Usage: stepcast" "Exit codes:" "Examples:" "scenarios/seeds/"
                  ARGS --help)
foreach(command predict scale catalog init)
  stepcast_cli_case(help_${command} STDOUT "Usage: stepcast ${command}" "Exit codes:"
                    "stepcast ${command}" "Scenario file" ARGS ${command} --help)
endforeach()
stepcast_cli_case(version STDOUT "stepcast ${PROJECT_VERSION}" ARGS --version)
stepcast_cli_case(catalog_text STDOUT "bf16 peak (TFLOP/s)" "latency (µs)" ARGS catalog)
stepcast_cli_case(catalog_json JSON_KEYS models gpus boxes clusters links algorithms
                  ARGS catalog --json)
stepcast_cli_case(catalog_gpus_json JSON_KEYS gpus ARGS catalog gpus --json)

# ---- predict and scale on a valid scenario ----
set(STEPCAST_CLI_PREDICT_KEYS gpus nodes strategy step_time_s time_per_epoch_s
    tokens_per_s_per_gpu mfu memory_per_gpu_bytes fits)
stepcast_cli_case(predict_minimal_text
                  STDOUT "Step time" "Throughput" "Epoch" "Memory per GPU" "Collectives" "Fabric"
                         "Assumptions"
                  ARGS predict ${STEPCAST_CLI_GOOD})
stepcast_cli_case(predict_minimal_json JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS}
                  ARGS predict ${STEPCAST_CLI_GOOD} --json)
stepcast_cli_case(predict_minimal_gpus_4 JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS}
                  STDOUT "\"gpus\": 4"
                  ARGS predict ${STEPCAST_CLI_GOOD} --gpus 4 --json)
stepcast_cli_case(scale_minimal_text STDOUT "scaling efficiency (%)"
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 1,2,4,8)
stepcast_cli_case(scale_minimal_json JSON_KEYS scenario rows
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 1,8 --json)
stepcast_cli_case(predict_minimal_simulation_text
                  STDOUT "Step time (simulated)" "closed-form bounds" "overlap ratio"
                         "busy (% of step)" "capacity (GB/s)" "Critical path" "peak memory (simulated)"
                  ARGS predict ${STEPCAST_CLI_GOOD})
stepcast_cli_case(predict_minimal_simulation_json
                  JSON_KEYS simulation trace_file
                  STDOUT "\"critical_path\"" "\"streams\"" "\"links\"" "\"overlap_ratio\""
                         "\"comm_exposed_s\""
                  ARGS predict ${STEPCAST_CLI_GOOD} --json)

# ---- --trace: a Chrome trace (JSON with traceEvents); an unwritable path is bad input ----
# run_cli_case.sh --file-json checks the written file; @TMP@ is a fresh temporary directory.
add_test(NAME cli.predict_trace
         COMMAND bash ${STEPCAST_CLI_DRIVER} --stdout "trace: " --stdout "ui.perfetto.dev"
                 --file-json @TMP@/step-trace.json --file-json-keys traceEvents,displayTimeUnit
                 -- $<TARGET_FILE:stepcast> predict
                 ${PROJECT_SOURCE_DIR}/scenarios/seeds/falcon7b-lora-zero3-16gpu-1gbe.json
                 --trace @TMP@/step-trace.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.predict_trace PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli.predict_trace_json
         COMMAND bash ${STEPCAST_CLI_DRIVER} --json-keys simulation,trace_file
                 --file-json @TMP@/trace.json --file-json-keys traceEvents
                 -- $<TARGET_FILE:stepcast> predict ${STEPCAST_CLI_GOOD} --json
                 --trace @TMP@/trace.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.predict_trace_json PROPERTIES LABELS cli TIMEOUT 120)
stepcast_cli_case(bad_trace_unwritable RC 2
                  STDERR "cannot write the trace file" "/nonexistent-dir/trace.json"
                  ARGS predict ${STEPCAST_CLI_GOOD} --trace /nonexistent-dir/trace.json)
stepcast_cli_case(usage_trace_empty RC 2 STDERR "--trace"
                  ARGS predict ${STEPCAST_CLI_GOOD} --trace "")

# Every seed scenario predicts (exit 0) as text and as JSON with the required keys.
file(GLOB STEPCAST_CLI_SEEDS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/seeds/*.json)
foreach(seed IN LISTS STEPCAST_CLI_SEEDS)
  get_filename_component(seed_name ${seed} NAME_WE)
  stepcast_cli_case(seed_${seed_name}_json JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS}
                    ARGS predict ${seed} --json)
  stepcast_cli_case(seed_${seed_name}_text STDOUT "Step time" ARGS predict ${seed})
endforeach()

# Every example scenario (context parallelism, CPU offload) predicts as text and as JSON.
file(GLOB STEPCAST_CLI_EXAMPLES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/examples/*.json)
foreach(example IN LISTS STEPCAST_CLI_EXAMPLES)
  get_filename_component(example_name ${example} NAME_WE)
  stepcast_cli_case(example_${example_name}_json JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS}
                    ARGS predict ${example} --json)
endforeach()
stepcast_cli_case(example_offload_text STDOUT "Host memory per node (CPU offload)" "FITS on GPU and host"
                  "CPU offload (optimizer, delayed parameter update)"
                  ARGS predict ${PROJECT_SOURCE_DIR}/scenarios/examples/llama2-13b-zero-offload-1xa100.json)
# The batch multiplies by the data-parallel replicas, not the GPUs: CP 8 on 8 GPUs is one replica.
stepcast_cli_case(example_cp_text STDOUT "context parallel 8 (ring)" "context-parallel K/V ring"
                  "micro-batch 1 x grad-accum 4 x 1 data-parallel replica = 4 samples/step"
                  ARGS predict ${PROJECT_SOURCE_DIR}/scenarios/examples/llama31-8b-cp8-ring-8xh100.json)
stepcast_cli_case(example_moe_mixtral_text STDOUT "expert-parallel dispatch all-to-all" "all_to_all" "moe_imbalance 1"
                  "MoE capacity factor 1"
                  ARGS predict ${PROJECT_SOURCE_DIR}/scenarios/examples/mixtral-8x7b-ep8-8xh100.json)
stepcast_cli_case(example_moe_deepseek_trace STDOUT "Step time" "expert-parallel combine gradient all-to-all"
                  ARGS predict ${PROJECT_SOURCE_DIR}/scenarios/examples/deepseek-v3-ep64-pp4-256xh100.json
                  --trace ${CMAKE_CURRENT_BINARY_DIR}/deepseek-v3-ep64-pp4.trace.json)

stepcast_cli_case(example_megatron_overlaps_text STDOUT "tp_comm_overlap: each layer's TP collectives run beside"
                  "overlap_grad_reduce: each stage reduces its gradients in buckets"
                  "overlap_param_gather: the updated parameters' all-gather runs at the step's start"
                  "parameter all-gather (beside the forward)" "(exposed part)"
                  ARGS predict ${PROJECT_SOURCE_DIR}/scenarios/examples/llama31-70b-megatron-overlaps-128xh100.json)

# ---- bad input: exit 2, the file and the JSON path named, no crash ----
stepcast_cli_case(bad_malformed RC 2 STDERR "malformed.json" "malformed JSON"
                  ARGS predict ${STEPCAST_CLI_BAD}/malformed.json)
stepcast_cli_case(bad_ep_not_dividing_dp RC 2 STDERR "ep_not_dividing_dp.json" "/strategy/ep" "expected a divisor of the 32"
                  ARGS predict ${STEPCAST_CLI_BAD}/ep_not_dividing_dp.json)
stepcast_cli_case(bad_moe_tp_without_sp RC 2 STDERR "moe_tp_without_sp.json" "/strategy/sp" "needs sequence parallelism"
                  ARGS predict ${STEPCAST_CLI_BAD}/moe_tp_without_sp.json)
stepcast_cli_case(bad_tp_comm_overlap_without_sp RC 2 STDERR "tp_comm_overlap_without_sp.json"
                  "/strategy/tp_comm_overlap" "needs sequence parallelism"
                  ARGS predict ${STEPCAST_CLI_BAD}/tp_comm_overlap_without_sp.json)
stepcast_cli_case(bad_tp_backward_overlap_without_tp RC 2 STDERR "tp_backward_overlap_without_tp.json"
                  "/strategy/tp_backward_overlap" "needs tensor parallelism"
                  ARGS predict ${STEPCAST_CLI_BAD}/tp_backward_overlap_without_tp.json)
stepcast_cli_case(bad_attention_kernel_gpu RC 2 STDERR "/training/attention_kernel"
                  "runs on the b200-sxm-180gb (blackwell), one of flash2, cudnn, mem_efficient, triton, unfused; got flash3"
                  ARGS predict ${STEPCAST_CLI_BAD}/attention_kernel_gpu.json)
stepcast_cli_case(bad_ep_dense_model RC 2 STDERR "/strategy/ep" "has no experts"
                  ARGS predict ${STEPCAST_CLI_BAD}/ep_dense_model.json)
stepcast_cli_case(bad_moe_unknown_key RC 2 STDERR "/model/moe/shared_expert" "did you mean \"shared_experts\""
                  ARGS predict ${STEPCAST_CLI_BAD}/moe_unknown_key.json)
stepcast_cli_case(bad_unknown_key RC 2 STDERR "unknown_key.json" "/colour"
                  ARGS predict ${STEPCAST_CLI_BAD}/unknown_key.json)
stepcast_cli_case(bad_micro_batch_type RC 2 STDERR "micro_batch_type.json" "/training/micro_batch"
                  ARGS predict ${STEPCAST_CLI_BAD}/micro_batch_type.json)
stepcast_cli_case(bad_micro_batch_negative RC 2
                  STDERR "micro_batch_negative.json" "/training/micro_batch"
                  ARGS predict ${STEPCAST_CLI_BAD}/micro_batch_negative.json)
stepcast_cli_case(bad_seq_len_zero RC 2 STDERR "seq_len_zero.json" "/training/seq_len"
                  ARGS predict ${STEPCAST_CLI_BAD}/seq_len_zero.json)
stepcast_cli_case(bad_unknown_model RC 2 STDERR "unknown_model.json" "/model" "gpt-9000"
                  ARGS predict ${STEPCAST_CLI_BAD}/unknown_model.json)
stepcast_cli_case(bad_unknown_box RC 2 STDERR "unknown_box.json" "/hardware/box" "dgx-z9000"
                  ARGS predict ${STEPCAST_CLI_BAD}/unknown_box.json)
stepcast_cli_case(bad_unknown_cluster RC 2
                  STDERR "unknown_cluster.json" "/hardware/cluster" "moon-base-1"
                  ARGS predict ${STEPCAST_CLI_BAD}/unknown_cluster.json)
stepcast_cli_case(bad_gpus_not_divisible RC 2 STDERR "gpus_not_divisible.json" "/hardware/gpus"
                  ARGS predict ${STEPCAST_CLI_BAD}/gpus_not_divisible.json)
stepcast_cli_case(bad_gpus_option_not_divisible RC 2 STDERR "minimal.json" "--gpus 12"
                  ARGS predict ${STEPCAST_CLI_GOOD} --gpus 12)
stepcast_cli_case(bad_scale_not_divisible RC 2 STDERR "minimal.json" "--gpus 12"
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 8,12)
stepcast_cli_case(bad_unknown_strategy RC 2 STDERR "unknown_strategy.json" "/strategy/name" "zero4"
                  ARGS predict ${STEPCAST_CLI_BAD}/unknown_strategy.json)
stepcast_cli_case(bad_lora_unknown_target RC 2
                  STDERR "lora_unknown_target.json" "/training/lora/targets/1" "qkv"
                  ARGS predict ${STEPCAST_CLI_BAD}/lora_unknown_target.json)
stepcast_cli_case(bad_missing_file RC 2 STDERR "does_not_exist.json"
                  ARGS predict ${STEPCAST_CLI_BAD}/does_not_exist.json)
stepcast_cli_case(bad_missing_file_json RC 2 STDERR "does_not_exist.json"
                  ARGS predict ${STEPCAST_CLI_BAD}/does_not_exist.json --json)

# ---- bad command lines: exit 2 ----
stepcast_cli_case(usage_no_command RC 2 STDERR "subcommand" ARGS)
stepcast_cli_case(usage_predict_no_scenario RC 2 STDERR "SCENARIO" ARGS predict)
stepcast_cli_case(usage_unknown_option RC 2 STDERR "--frobnicate"
                  ARGS predict ${STEPCAST_CLI_GOOD} --frobnicate)
stepcast_cli_case(usage_gpus_zero RC 2 STDERR "--gpus" ARGS predict ${STEPCAST_CLI_GOOD} --gpus 0)
stepcast_cli_case(usage_scale_bad_list RC 2 STDERR "--gpus"
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 1,x)
stepcast_cli_case(usage_scale_no_gpus RC 2 STDERR "--gpus" ARGS scale ${STEPCAST_CLI_GOOD})
stepcast_cli_case(usage_catalog_unknown_section RC 2 STDERR "bogus" ARGS catalog bogus)

# ---- every example command line shown by --help runs (exit 0) ----
add_test(NAME cli.help_examples_run
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_cli_examples.sh $<TARGET_FILE:stepcast>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.help_examples_run PROPERTIES LABELS cli TIMEOUT 300)

# ---- straggler nodes: their own rank class; bad groups are bad input ----
stepcast_cli_case(straggler_runs RC 0 STDOUT "throttled node" "simulated as their own rank class"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/straggler.json)
stepcast_cli_case(bad_straggler_all_nodes RC 2 STDERR "straggler_all_nodes.json" "/hardware/stragglers/0/nodes"
                  ARGS predict ${STEPCAST_CLI_BAD}/straggler_all_nodes.json)
stepcast_cli_case(bad_straggler_speed_zero RC 2 STDERR "straggler_speed_zero.json" "/hardware/stragglers/0/compute_speed"
                  ARGS predict ${STEPCAST_CLI_BAD}/straggler_speed_zero.json)
stepcast_cli_case(bad_straggler_unknown_key RC 2 STDERR "straggler_unknown_key.json" "/hardware/stragglers/0/speed"
                  ARGS predict ${STEPCAST_CLI_BAD}/straggler_unknown_key.json)

# training.launch_blocking acts: the assumption is printed and launches add to the step.
stepcast_cli_case(predict_launch_blocking RC 0 STDOUT "launch_blocking: CUDA_LAUNCH_BLOCKING=1"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/launch_blocking.json)
stepcast_cli_case(bad_launch_blocking_type RC 2 STDERR "/training/launch_blocking"
                  ARGS predict ${STEPCAST_CLI_BAD}/launch_blocking_type.json)
stepcast_cli_case(bad_grad_accumulation_name RC 2 STDERR "/training/grad_accumulation" "did you mean \"autograd\""
                  ARGS predict ${STEPCAST_CLI_BAD}/grad_accumulation_name.json)

# ---- validate: measured-run records; a skipped record keeps its reason; bad lines exit 2 ----
stepcast_cli_case(validate_text RC 0
                  STDOUT "llmfoundry-h10080-70b-s2048-g512-amp_bf16" "skipped: activation checkpointing not stated" "Summary, leave one source out"
                  ARGS validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl)
stepcast_cli_case(validate_json RC 0 JSON JSON_KEYS runs summary summary_loso summary_fit_free sources groups
                  ARGS validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl --json)
# --pairs lists each ordering pair, wrong ones first: BigScience's layout pairs are one knob apart.
stepcast_cli_case(validate_pairs RC 0
                  STDOUT "Ordering pairs (two records one knob apart)" "WRONG"
                         "layout       bigscience-prequel-a100-181b-g384-dp8tp8pp6-mbs1"
                  ARGS validate ${PROJECT_SOURCE_DIR}/data/validation/runs.jsonl --pairs)
# It predicts all 214 records twice (leave one source out and fit-free): ~96 s alone under
# ASan + UBSan on 2 cores, more beside the other tests, so past the CLI cases' 120 s.
set_tests_properties(cli.validate_pairs PROPERTIES TIMEOUT 600)
stepcast_cli_case(bad_validate_unknown_key RC 2 STDERR "runs_unknown_key.jsonl:2" "/colour"
                  ARGS validate ${STEPCAST_CLI_BAD}/runs_unknown_key.jsonl)
stepcast_cli_case(bad_validate_malformed RC 2 STDERR "runs_malformed.jsonl:2" "malformed JSON"
                  ARGS validate ${STEPCAST_CLI_BAD}/runs_malformed.jsonl)
stepcast_cli_case(bad_validate_missing RC 2 STDERR "no such file or folder"
                  ARGS validate ${STEPCAST_CLI_BAD}/absent.jsonl)

# ---- a scenario naming a calibration (stepcast fit's hardware file) ----
stepcast_cli_case(calibrated_predict RC 0 STDOUT "calibration" "measured"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/calibrated.json)
# The JSON report lists each collective's phases as simulated (the calibration's measurement).
stepcast_cli_case(calibrated_predict_phases_json RC 0 STDOUT "\"phases\"" "\"algorithm\": \"measured\"" "\"latency_s\""
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/calibrated.json --json)
stepcast_cli_case(bad_calibration_wrong_gpu RC 2 STDERR "calibration_wrong_gpu.json" "/hardware/calibration" "h100-sxm5-80gb"
                  ARGS predict ${STEPCAST_CLI_BAD}/calibration_wrong_gpu.json)
stepcast_cli_case(validate_with_calibration RC 0 STDOUT "Summary, leave one source out"
                  ARGS validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl
                       --calibration ${CMAKE_CURRENT_LIST_DIR}/data/good/synthetic_hardware.json)

# A cloud box with a catalogued host runs CPU offload on it (AWS p5: 2x EPYC 7R13, 2 TiB).
stepcast_cli_case(predict_offload_on_aws_p5 STDOUT "on the host (CPU offload)" "2048.00  the box's host memory"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/offload-aws-p5.json)

# A MoE model under TP: experts whole on each rank, the EP group folded over the TP pairs
# (ep 16 > dp 8), the layout line naming every degree.
stepcast_cli_case(predict_moe_tp_folded
                  STDOUT "tensor parallel 2 (sequence parallel) x data parallel 8 | expert parallel 16"
                         "Megatron-Core's parallel folding" "verdict: FITS"
                  ARGS predict tests/data/good/moe-tp2-ep16-folded.json)

# MLA under TP with SP: the latents' all-gathers (2,112 of 7,168 wide) beside the
# hidden states' (17.30 MB against 58.72 MB per micro-batch).
stepcast_cli_case(predict_mla_tp_latent_gathers
                  STDOUT "expert parallel 64" "17.30" "58.72"
                  ARGS predict tests/data/good/mla-tp2-sp.json)

# A step whose micro-steps are added from their pattern, not simulated one by one, says so.
stepcast_cli_case(predict_pattern_assumption
                  STDOUT "100000 micro-steps were too many to simulate one by one"
                  ARGS predict tests/data/good/hybrid_many_microsteps.json)
# So does a pipeline whose steady state never repeats to the nanosecond (the closed form's
# mean period: context-parallel exchanges and the stages' sends share the NICs).
stepcast_cli_case(predict_pipeline_mean_period
                  STDOUT "128 micro-batches do not settle into an exact period"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/pipeline-mean-period.json)

# ---- scenarios people can write: five keys predict, defaults under Assumptions,
# every problem at once, allowed keys and "did you mean" ----
set(STEPCAST_CLI_FIVE ${CMAKE_CURRENT_LIST_DIR}/data/good/five_keys.json)
stepcast_cli_case(five_keys_predicts
                  STDOUT "Assumptions" "name: \"five_keys\" (the file's name)" "hardware.nodes: 2"
                         "hardware.network: the dgx-h100's own NICs" "training.precision: bf16_mixed"
                         "training.flash_attention: true" "time per epoch: n/a"
                  ARGS predict ${STEPCAST_CLI_FIVE})
# No dataset: the epoch keys are there, null.
stepcast_cli_case(five_keys_json_epoch_null JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS}
                  STDOUT "\"time_per_epoch_s\": null" "\"steps_per_epoch\": null" "\"cost_per_epoch_usd\": null"
                  ARGS predict ${STEPCAST_CLI_FIVE} --json)
stepcast_cli_case(five_keys_scale STDOUT "n/a" ARGS scale ${STEPCAST_CLI_FIVE} --gpus 8,16)
stepcast_cli_case(bad_three_mistakes RC 2
                  STDERR "three_mistakes.json: /model: unknown model \"llama3-8b\" (did you mean \"llama-3-8b\"?)"
                         "three_mistakes.json: /hardware/box: unknown box \"dgx-h100-80gb\" (did you mean \"dgx-h100\"?)"
                         "three_mistakes.json: /strategy/prefetch: unknown key (did you mean \"prefetch_layers\"?)"
                         "3 problems in"
                  ARGS predict ${STEPCAST_CLI_BAD}/three_mistakes.json)
stepcast_cli_case(bad_dym_micro_bach RC 2
                  STDERR "dym_micro_bach.json: /training/micro_bach: unknown key (did you mean \"micro_batch\"?)"
                         "/training/micro_batch: missing" "\"grad_accum\"" "\"recompute\""
                  ARGS predict ${STEPCAST_CLI_BAD}/dym_micro_bach.json)
stepcast_cli_case(bad_dym_price RC 2
                  STDERR "dym_price.json: /price_per_gpu_hour: unknown key (did you mean \"price_per_gpu_hour_usd\"?)"
                         "\"dataset\"" "\"measured\"" "\"notes\""
                  ARGS predict ${STEPCAST_CLI_BAD}/dym_price.json)
stepcast_cli_case(bad_dym_prefetch RC 2
                  STDERR "dym_prefetch.json: /strategy/prefetch: unknown key (did you mean \"prefetch_layers\"?)"
                         "\"bucket_mb\"" "\"algorithm\"" "\"reduce_dtype\""
                  ARGS predict ${STEPCAST_CLI_BAD}/dym_prefetch.json)
stepcast_cli_case(bad_dym_model RC 2 STDERR "dym_model.json: /model: unknown model \"llama3-8b\" (did you mean \"llama-3-8b\"?)"
                  ARGS predict ${STEPCAST_CLI_BAD}/dym_model.json)
stepcast_cli_case(bad_dym_box RC 2 STDERR "dym_box.json: /hardware/box: unknown box \"dgx-h100-80gb\" (did you mean \"dgx-h100\"?)"
                  ARGS predict ${STEPCAST_CLI_BAD}/dym_box.json)

# ---- stepcast init: a starter that predicts as written ----
stepcast_cli_case(init_stdout JSON STDOUT "\"micro_batch\": 1" "\"notes\"" ARGS init --model gpt2 --box dgx-a100)
add_test(NAME cli.init_then_predict
         COMMAND bash ${STEPCAST_CLI_DRIVER} --stdout "Step time" --stdout "hardware.network: the dgx-h100's own NICs"
                 -- sh -c "$<TARGET_FILE:stepcast> init --model llama-3-8b --box dgx-h100 --gpus 16 -o @TMP@/starter.json && exec $<TARGET_FILE:stepcast> predict @TMP@/starter.json"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.init_then_predict PROPERTIES LABELS cli TIMEOUT 120)
stepcast_cli_case(bad_init_model RC 2 STDERR "--model: unknown model \"llama3-8b\" (did you mean \"llama-3-8b\"?)"
                  ARGS init --model llama3-8b --box dgx-h100)
stepcast_cli_case(bad_init_box RC 2 STDERR "--box: unknown box \"dgx-h100-80gb\" (did you mean \"dgx-h100\"?)"
                  ARGS init --model gpt2 --box dgx-h100-80gb)
stepcast_cli_case(bad_init_gpus RC 2 STDERR "--gpus 12" ARGS init --model gpt2 --box dgx-h100 --gpus 12)

# ---- plan and compare ----
stepcast_cli_case(help_plan STDOUT "Usage: stepcast plan" "Examples:" "stepcast plan" "Exit codes:"
                  ARGS plan --help)
stepcast_cli_case(help_compare STDOUT "Usage: stepcast compare" "Examples:" "Exit codes:"
                  ARGS compare --help)
stepcast_cli_case(plan_minimal_text
                  STDOUT "step time (s)" "tokens/s/GPU" "MFU (%)" "memory/GPU (GiB)" "exposed comm (s)"
                         "bubble (%)" "Why the winner:" "252  tp does not divide" "384  micro_batch x dp"
                         "4872  a pipeline runs ddp or zero1" "222  interleaved schedule"
                         "8190 layouts enumerated" "Not enumerated (as the options say): context parallelism"
                  ARGS plan ${STEPCAST_CLI_GOOD} --top 3 --no-cp --no-offload)
stepcast_cli_case(plan_minimal_json
                  JSON_KEYS scenario gpus global_batch objective enumerated screened simulated exact
                            rejected rows why
                  STDOUT "\"global_batch\": 128" "\"gpus\": 16"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus 16 --global-batch 128 --top 2 --json)
stepcast_cli_case(plan_objective_tokens STDOUT "objective: tokens/s/GPU"
                  ARGS plan ${STEPCAST_CLI_GOOD} --objective tokens_per_s --top 2)
stepcast_cli_case(plan_cost_without_price RC 2 STDERR "--objective cost needs price_per_gpu_hour_usd"
                  ARGS plan ${STEPCAST_CLI_GOOD} --objective cost)
stepcast_cli_case(plan_bad_objective RC 2 STDERR "--objective"
                  ARGS plan ${STEPCAST_CLI_GOOD} --objective speed)
stepcast_cli_case(plan_bad_fraction RC 2 STDERR "--max-memory-fraction"
                  ARGS plan ${STEPCAST_CLI_GOOD} --max-memory-fraction 1.5)
stepcast_cli_case(plan_gpus_range_text
                  STDOUT "Plans of cli-minimal by GPU count, global batch 64 sequences" "best layout"
                         "on 8 GPUs" "on 16 GPUs"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus-range 8:16 --global-batch 64 --top 1)
stepcast_cli_case(plan_gpus_range_json JSON_KEYS scenario global_batch plans summary
                  STDOUT "\"gpus\": 16" "\"gpus\": 8"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus-range 8,16 --top 1 --json)
stepcast_cli_case(plan_gpus_range_bad RC 2 STDERR "--gpus-range"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus-range 16:8)
stepcast_cli_case(plan_gpus_and_range RC 2 STDERR "not both"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus 8 --gpus-range 8:16)
stepcast_cli_case(help_need STDOUT "Usage: stepcast need" "Examples:" "rule of thumb" "Exit codes:"
                  ARGS need --help)
stepcast_cli_case(need_seed4_unreachable
                  STDOUT "written network: 1 x eth-100g" "Answer: none" "Rule of thumb:" "bandwidth (Gb/s)"
                         "exposed (%)" "written"
                  ARGS need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 5% --curve-points 2)
stepcast_cli_case(need_seed4_answer STDOUT "Answer: " "NIC(s) of 100 Gb/s" "needed" "rule of thumb"
                  ARGS need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 70% --curve-points 2)
stepcast_cli_case(need_json JSON_KEYS scenario needed_Gbps nics_needed rule_of_thumb_Gbps curve written at_max
                  ARGS need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 0.7 --curve-points 1 --json)
stepcast_cli_case(need_bad_share RC 2 STDERR "--exposed-comm"
                  ARGS need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 150%)
stepcast_cli_case(need_one_node RC 2 STDERR "one node"
                  ARGS need ${STEPCAST_CLI_GOOD})
stepcast_cli_case(compare_text
                  STDOUT "step time (s)" "time per epoch (h)" "tokens/s" "cost per epoch (USD)" "USD per Mtok"
                         "lightning-ddp-8xa100" "lightning-ddp-3xh100"
                  ARGS compare scenarios/seeds/lightning-ddp-8xa100.json scenarios/seeds/lightning-ddp-3xh100.json)
stepcast_cli_case(compare_json JSON_KEYS rows STDOUT "\"usd_per_million_tokens\"" "\"verdict\""
                  ARGS compare ${STEPCAST_CLI_GOOD} scenarios/seeds/gpt2-xl-ddp-8xa100.json --json)
set(STEPCAST_CLI_PLAN ${CMAKE_CURRENT_LIST_DIR}/data/plan)
stepcast_cli_case(compare_priced_json JSON_KEYS rows STDOUT "\"cost_per_epoch_usd\": " "dgx-h100"
                  ARGS compare ${STEPCAST_CLI_PLAN}/gpt2-8xa100-priced.json ${STEPCAST_CLI_PLAN}/gpt2-8xh100-priced.json
                       --json)
# Both priced: the costs are there and no line says a price is missing.
add_test(NAME cli.compare_priced_text_no_missing_price
         COMMAND stepcast compare ${STEPCAST_CLI_PLAN}/gpt2-8xa100-priced.json ${STEPCAST_CLI_PLAN}/gpt2-8xh100-priced.json)
set_tests_properties(cli.compare_priced_text_no_missing_price PROPERTIES PASS_REGULAR_EXPRESSION "USD per Mtok = price"
                                                                        FAIL_REGULAR_EXPRESSION "cost needs|n/a")
stepcast_cli_case(compare_unpriced_says_why STDOUT "n/a: cost needs price_per_gpu_hour_usd"
                  ARGS compare ${STEPCAST_CLI_GOOD} scenarios/seeds/gpt2-xl-ddp-8xa100.json)
# With a dataset and a price, each plan row has the run's time and cost.
stepcast_cli_case(plan_rows_time_and_cost STDOUT "time to train (h)" "cost (USD)"
                  ARGS plan ${STEPCAST_CLI_PLAN}/gpt2-8xh100-priced.json --top 2)
stepcast_cli_case(plan_rows_time_and_cost_json JSON_KEYS rows STDOUT "\"time_per_epoch_s\": " "\"cost_per_epoch_usd\": "
                  ARGS plan ${STEPCAST_CLI_PLAN}/gpt2-8xh100-priced.json --top 2 --json)
stepcast_cli_case(plan_cost_objective STDOUT "objective: USD/Mtok"
                  ARGS plan ${STEPCAST_CLI_PLAN}/gpt2-8xh100-priced.json --objective cost --top 2)

# ---- user catalogs (--catalog DIR, STEPCAST_CATALOG_PATH) and inline hardware ----
set(STEPCAST_CLI_CATALOGS ${CMAKE_CURRENT_LIST_DIR}/data/catalog)
set(STEPCAST_CLI_GOOD_DIR ${CMAKE_CURRENT_LIST_DIR}/data/good)
stepcast_cli_case(user_catalog_predict JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS} STDOUT "\"gpus\": 16"
                  ARGS predict ${STEPCAST_CLI_GOOD_DIR}/user-catalog.json --catalog ${STEPCAST_CLI_CATALOGS}/user --json)
stepcast_cli_case(user_catalog_listed STDOUT "user-h100-slow" "user-hgx-slow" "user-150g" "user-llama-tiny"
                  ARGS catalog --catalog ${STEPCAST_CLI_CATALOGS}/user)
stepcast_cli_case(user_catalog_missing RC 2 STDERR "/model: unknown model \"example-org/llama-tiny\""
                  ARGS predict ${STEPCAST_CLI_GOOD_DIR}/user-catalog.json)
stepcast_cli_case(user_catalog_redefines RC 2
                  STDERR "dup/gpus.json: /gpus/0: GPU \"H100-SXM5-80GB\" is already in the catalog"
                  ARGS catalog gpus --catalog ${STEPCAST_CLI_CATALOGS}/dup)
stepcast_cli_case(user_catalog_unknown_file RC 2 STDERR "unknown catalog file gpu.json (did you mean \"gpus.json\"?)"
                  ARGS catalog --catalog ${STEPCAST_CLI_CATALOGS}/typo)
stepcast_cli_case(user_catalog_no_folder RC 2 STDERR "catalog folder no-such-folder: no such folder"
                  ARGS catalog --catalog no-such-folder)
add_test(NAME cli.user_catalog_path_variable
         COMMAND ${CMAKE_COMMAND} -E env STEPCAST_CATALOG_PATH=/nonexistent-but-skipped-no:${STEPCAST_CLI_CATALOGS}/user
                 bash ${STEPCAST_CLI_DRIVER} --rc 2 --stderr "catalog folder /nonexistent-but-skipped-no: no such folder"
                 -- $<TARGET_FILE:stepcast> catalog)
add_test(NAME cli.user_catalog_path_variable_predict
         COMMAND ${CMAKE_COMMAND} -E env STEPCAST_CATALOG_PATH=${STEPCAST_CLI_CATALOGS}/user
                 bash ${STEPCAST_CLI_DRIVER} --json-keys step_time_s
                 -- $<TARGET_FILE:stepcast> predict ${STEPCAST_CLI_GOOD_DIR}/user-catalog.json --json)
set_tests_properties(cli.user_catalog_path_variable cli.user_catalog_path_variable_predict PROPERTIES LABELS cli
                     TIMEOUT 120 WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
stepcast_cli_case(inline_hardware_predict JSON_KEYS ${STEPCAST_CLI_PREDICT_KEYS} STDOUT "\"nodes\": 2"
                  ARGS predict ${STEPCAST_CLI_GOOD_DIR}/inline-hardware.json --json)
