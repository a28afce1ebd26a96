# Command-line cases for hostile scenarios and measured-run records: each input in
# tests/data/hostile_records/ is valid but for the one defect its file name names. Every
# defect is bad input (exit 2, the file, the line for a record and the JSON path in the
# message) or, where stepcast cannot represent a valid record, an explicit skip (exit 0);
# never a crash, a hang or an "ok" row with an infinite error. Included from
# tests/CMakeLists.txt after cli_tests.cmake (it uses stepcast_cli_case).

set(STEPCAST_HOSTILE ${CMAKE_CURRENT_LIST_DIR}/data/hostile_records)

# stepcast_hostile_case("<case>|<JSON path>" <kind> <ext[:line]> <command>): `stepcast
# <command>` on <case>.<ext> exits 2 naming "<case>.<ext>[:line]: <JSON path>".
function(stepcast_hostile_case case_path kind where command)
  string(REPLACE "|" ";" parts "${case_path}")
  list(GET parts 0 case)
  list(GET parts 1 path)
  string(REPLACE ":" ";" ext_line "${where}")
  list(GET ext_line 0 ext)
  stepcast_cli_case(hostile_${kind}_${case} RC 2 STDERR "${case}.${where}: ${path}"
                    ARGS ${command} ${STEPCAST_HOSTILE}/${case}.${ext})
endfunction()

# ---- records: line 1 is a good record, line 2 the hostile one ----
stepcast_cli_case(hostile_record_good_is_ok RC 0 STDOUT "ok"
                  ARGS validate ${STEPCAST_HOSTILE}/good.jsonl)
foreach(case_path
        "gpus_per_node_zero|/hardware/gpus_per_node"
        "gpus_per_node_2pow32|/hardware/gpus_per_node"
        "gpus_beyond_bound|/hardware/gpus"
        "micro_batch_zero_with_global_batch|/batch/micro_batch"
        "grad_accum_huge|/batch/grad_accum"
        "heads_zero|/model/heads"
        "layers_zero|/model/layers"
        "hidden_zero|/model/hidden"
        "kv_heads_zero|/model/kv_heads"
        "seq_beyond_position_table|/model/seq_len"
        "measured_value_zero|/measured/value"
        "measured_value_negative|/measured/value"
        "precision_unknown|/strategy/precision"
        "checkpointing_unknown|/strategy/activation_checkpointing"
        # fuzz findings F2-F4 (the fuzzers' findings): 1e400, grad_accum 0, micro_batch 0
        "measured_value_1e400|/measured/value"
        "grad_accum_zero|/batch/grad_accum"
        "micro_batch_zero|/batch/micro_batch"
        # F5, F6 are gpus_per_node_zero and micro_batch_zero_with_global_batch above; F7, F8:
        "micro_batch_2pow62|/batch/micro_batch"
        "layers_2pow40|/model/layers")
  stepcast_hostile_case("${case_path}" record jsonl:2 validate)
endforeach()
stepcast_cli_case(hostile_record_head_dim_is_an_explicit_skip RC 0
                  STDOUT "skipped: cannot represent a head dimension"
                  ARGS validate ${STEPCAST_HOSTILE}/head_dim_not_representable.jsonl --json)

# ---- scenarios: bounds of base/limits.hpp (workload section), no int wrap, no hang ----
foreach(case_path
        "lora_target_twice|/training/lora/targets/2"
        "straggler_speed_tiny|/hardware/stragglers/0/compute_speed"
        "straggler_nodes_wrap|/hardware/stragglers/0/nodes"
        "nodes_wrap|/hardware/nodes"
        "prefetch_wrap|/strategy/prefetch_layers"
        "prefetch_beyond_layers|/strategy/prefetch_layers"
        "bucket_mb_tiny|/strategy/bucket_mb"
        "grad_accum_huge|/training/grad_accum"
        "seq_len_huge|/training/seq_len"
        "seq_beyond_position_table|/training/seq_len"
        "gpus_beyond_bound|/hardware/gpus"
        "tokens_per_step|/training/micro_batch"
        "layers_million|/model/layers"
        "layers_2pow40|/model/layers"
        "price_huge|/price_per_gpu_hour_usd"
        "dataset_huge|/dataset/tokens")
  stepcast_hostile_case("${case_path}" scenario json predict)
endforeach()
stepcast_cli_case(hostile_scenario_gpus_flag_beyond_bound RC 2 STDERR "--gpus 2097152"
                  ARGS predict ${CMAKE_CURRENT_LIST_DIR}/data/good/minimal.json --gpus 2097152)
