# Command-line tests of --csv on the table commands (scale, plan, compare, validate) and of
# scale's baseline, costs and MFU (issues 13 and 14). Included from tests/CMakeLists.txt
# after cli_tests.cmake (it uses stepcast_cli_case and STEPCAST_CLI_GOOD from there).
#
# stepcast_cli_csv_case(<name> ROWS <n> ARGS <command and arguments>...): tests/cli_csv.py
# runs the command with --csv and with --json and checks the CSV against the JSON: a header
# whose every column names its unit, n rows, every cell equal to the JSON row's figure.
find_package(Python3 COMPONENTS Interpreter)
set(STEPCAST_SCALE_PRICED ${CMAKE_CURRENT_LIST_DIR}/data/scale/llama-3-8b-fsdp-dgx-a100-priced.json)

function(stepcast_cli_csv_case name)
  cmake_parse_arguments(ARG "" "ROWS" "ARGS" ${ARGN})
  if(Python3_Interpreter_FOUND)
    add_test(NAME cli.${name}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli_csv.py --rows ${ARG_ROWS}
                     -- $<TARGET_FILE:stepcast> ${ARG_ARGS}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(cli.${name} PROPERTIES LABELS cli TIMEOUT 120)
  endif()
endfunction()

# ---- --csv: each table command, checked cell by cell against its --json ----
stepcast_cli_csv_case(scale_csv ROWS 3 ARGS scale ${STEPCAST_SCALE_PRICED} --gpus 1,8,16)
stepcast_cli_csv_case(plan_csv ROWS 3 ARGS plan ${STEPCAST_CLI_GOOD} --top 3)
stepcast_cli_csv_case(plan_csv_cost ROWS 2
                      ARGS plan ${CMAKE_CURRENT_LIST_DIR}/data/plan/gpt2-8xh100-priced.json --objective cost --top 2)
stepcast_cli_csv_case(compare_csv ROWS 2
                      ARGS compare ${CMAKE_CURRENT_LIST_DIR}/data/plan/gpt2-8xa100-priced.json
                           ${CMAKE_CURRENT_LIST_DIR}/data/plan/gpt2-8xh100-priced.json)
stepcast_cli_csv_case(validate_csv ROWS 2 ARGS validate ${CMAKE_CURRENT_LIST_DIR}/data/good/runs.jsonl)
stepcast_cli_case(scale_csv_header
                  STDOUT "gpus,nodes,step_time_s,comm_exposed_s,tokens_per_s,tokens_per_s_per_gpu,mfu_fraction,time_per_epoch_s,cost_per_epoch_usd,usd_per_million_tokens,baseline_bool,speedup_x,scaling_efficiency_fraction,memory_per_gpu_bytes,memory_verdict,fits_bool"
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 1,8 --csv)
stepcast_cli_csv_case(plan_range_csv ROWS 4
                      ARGS plan ${STEPCAST_CLI_GOOD} --gpus-range 8:16 --global-batch 128 --top 2)
stepcast_cli_case(plan_range_csv_header STDOUT "gpus,rank,layout,strategy,tp,sp_bool,dp,pp,vpp,schedule,"
                  ARGS plan ${STEPCAST_CLI_GOOD} --gpus-range 8:16 --global-batch 128 --top 2 --csv)
stepcast_cli_case(csv_excludes_json RC 2 STDERR "excludes"
                  ARGS scale ${STEPCAST_CLI_GOOD} --gpus 1,8 --csv --json)

# ---- scale: the baseline is the fewest GPUs that fit; rows carry MFU, tokens/s/GPU, cost ----
stepcast_cli_case(scale_oom_baseline_json
                  JSON_KEYS scenario baseline_gpus price_per_gpu_hour_usd global_batch_fixed rows
                  STDOUT "\"baseline_gpus\": 8" "\"mfu\": " "\"tokens_per_s_per_gpu\": " "\"cost_per_epoch_usd\": "
                         "\"usd_per_million_tokens\": " "\"baseline\": true" "\"speedup\": null"
                  ARGS scale ${STEPCAST_SCALE_PRICED} --gpus 1,8,16 --json)
stepcast_cli_case(scale_oom_baseline_text
                  STDOUT "speedup = tokens/s over the 8-GPU row (*: the fewest GPUs that fit in memory"
                         "1.00*" "NO (OOM)" "USD per M tokens" "MFU (%)"
                  ARGS scale ${STEPCAST_SCALE_PRICED} --gpus 1,8,16)
# ---- scale --fixed-batch: strong scaling at the scenario's global batch (128 sequences) ----
set(STEPCAST_SCALE_EXAMPLE ${CMAKE_CURRENT_LIST_DIR}/../scenarios/examples/llama3-8b-fsdp-16xh100.json)
stepcast_cli_csv_case(scale_fixed_batch_csv ROWS 3 ARGS scale ${STEPCAST_SCALE_EXAMPLE} --gpus 8,16,32 --fixed-batch)
stepcast_cli_case(scale_fixed_batch_text
                  STDOUT "batch (mb x ga)" "1 x 16" "1 x 8" "global batch fixed at 128 sequences (--fixed-batch)"
                  ARGS scale ${STEPCAST_SCALE_EXAMPLE} --gpus 8,16 --fixed-batch)
stepcast_cli_case(scale_fixed_batch_indivisible RC 2
                  STDERR "the global batch of 128 sequences does not split over 24 data-parallel ranks"
                  ARGS scale ${STEPCAST_SCALE_EXAMPLE} --gpus 24 --fixed-batch)
stepcast_cli_case(scale_none_fits_text STDOUT "no GPU count fits in memory: no baseline"
                  ARGS scale ${STEPCAST_SCALE_PRICED} --gpus 1)
