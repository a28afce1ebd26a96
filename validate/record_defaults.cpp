/// \file
/// Framework defaults for unstated record fields; see record_defaults.hpp.
#include "validate/record_defaults.hpp"

#include "model/transformer.hpp"

#include "base/json_input.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

namespace stepcast {

namespace {

bool framework_has(const MeasuredRun& r, const char* needle) {
  return r.framework && r.framework->find(needle) != std::string::npos;
}

template <typename T>
void fill(std::optional<T>& field, const T& value, const char* what, const char* source,
          std::vector<std::string>& assumed) {
  if (field) return;
  field = value;
  assumed.push_back(fmt::format("{} {}: not stated; {}", what, value, source));
}

/// One record's recompute as its release's Megatron-Bridge performance recipe set it
/// (data/recipes/megatron-bridge-recompute.jsonl, read from each release's tag).
struct RecipeRecompute {
  std::string rev, commit, config;
  std::optional<std::string> granularity;
  std::vector<std::string> modules;
  bool activation_offload = false;
  bool layout_matches = true;  ///< the config's parallel layout is the record's
};

/// The recipe table by record id, read once; empty when the file is absent.
const std::map<std::string, RecipeRecompute>& recipe_table() {
  static const std::map<std::string, RecipeRecompute> table = [] {
    std::map<std::string, RecipeRecompute> out;
    std::ifstream in(data_dir() / "data" / "recipes" / "megatron-bridge-recompute.jsonl");
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      RecipeRecompute r;
      r.rev = j.at("rev").get<std::string>();
      r.commit = j.at("commit").get<std::string>();
      r.config = j.at("config").get<std::string>();
      if (!j.at("recompute_granularity").is_null()) r.granularity = j.at("recompute_granularity").get<std::string>();
      if (j.at("recompute_modules").is_array()) r.modules = j.at("recompute_modules").get<std::vector<std::string>>();
      r.activation_offload = j.at("activation_offload").get<bool>();
      r.layout_matches = j.at("layout_matches").get<bool>();
      out.emplace(j.at("id").get<std::string>(), std::move(r));
    }
    return out;
  }();
  return table;
}

/// The runtime recipe table by record id, read once; empty when the file is absent.
const std::map<std::string, RecipeRuntime>& runtime_table() {
  static const std::map<std::string, RecipeRuntime> table = [] {
    std::map<std::string, RecipeRuntime> out;
    std::ifstream in(data_dir() / "data" / "recipes" / "megatron-bridge-runtime.jsonl");
    auto text = [](const nlohmann::json& v) {
      return v.is_null() ? std::optional<std::string>{} : std::optional<std::string>{v.get<std::string>()};
    };
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      RecipeRuntime r;
      r.rev = j.at("rev").get<std::string>();
      r.commit = j.at("commit").get<std::string>();
      r.config = j.at("config").get<std::string>();
      r.cuda_graph_impl = j.at("cuda_graph_impl").get<std::string>();
      if (j.at("cuda_graph_scope").is_array())
        r.cuda_graph_scope = j.at("cuda_graph_scope").get<std::vector<std::string>>();
      r.moe_dispatcher = text(j.at("moe_token_dispatcher"));
      r.moe_flex_backend = text(j.at("moe_flex_backend"));
      r.moe_a2a_overlap = j.at("moe_a2a_overlap").is_boolean() && j.at("moe_a2a_overlap").get<bool>();
      r.moe_token_drop = j.at("moe_token_drop").is_boolean() && j.at("moe_token_drop").get<bool>();
      if (j.at("tp_comm_overlap").is_boolean()) r.tp_comm_overlap = j.at("tp_comm_overlap").get<bool>();
      const std::string id = j.at("id").get<std::string>();
      if (const auto it = recipe_table().find(id); it != recipe_table().end())
        r.layout_matches = it->second.layout_matches;
      out.emplace(id, std::move(r));
    }
    return out;
  }();
  return table;
}

/// A Megatron-Bridge record's checkpointing and recompute modules from its release's recipe
/// (recipe_table): no granularity, none; "selective" with the modules stepcast models (an
/// empty list, or one of modules it does not, recomputes nothing here: none, said so); full
/// recompute of some layers is not modelled (none, said so). False when the table lacks the
/// record.
bool recipe_recompute(MeasuredRun& r, std::vector<std::string>& assumed) {
  const auto it = recipe_table().find(r.id);
  if (it == recipe_table().end()) return false;
  const RecipeRecompute& recipe = it->second;
  const std::string from = fmt::format("Megatron-Bridge {} @ {} ({}; data/recipes/megatron-bridge-recompute.jsonl)",
                                       recipe.rev, recipe.commit.substr(0, 8), recipe.config);
  RecomputeModules modules{false};
  std::vector<std::string> unmodelled;
  for (const std::string& m : recipe.modules) {
    try {
      add_recompute_module(modules, m);
    } catch (const std::invalid_argument&) {
      unmodelled.push_back(m);
    }
  }
  const bool selective = recipe.granularity == "selective" && !(modules == RecomputeModules{false});
  r.checkpointing = selective ? "selective" : "none";
  if (selective) r.recompute_modules = modules;
  std::string line = fmt::format("activation checkpointing {}: not stated; {}", *r.checkpointing, from);
  if (selective) line += fmt::format(", recompute_modules {}", recompute_modules_text(modules));
  if (recipe.granularity == "selective" && !selective) line += ": selective with no module stepcast models";
  if (recipe.granularity && *recipe.granularity != "selective")
    line += fmt::format(": {} recompute of some layers, not modelled, predicted without it", *recipe.granularity);
  if (!unmodelled.empty())
    line += fmt::format("; module(s) {} not modelled, predicted without", fmt::join(unmodelled, ", "));
  if (recipe.activation_offload) line += "; its activation CPU offload is not modelled, predicted without it";
  if (!recipe.layout_matches) line += "; the config's parallel layout is not the record's (the table's notes say how)";
  assumed.push_back(line);
  return true;
}

/// Megatron-Core as NeMo (24.x) and Megatron-Bridge (25.09 on) package it: their performance
/// recipes do not recompute activations unless a recipe says so, unlike the 2021 Megatron-LM
/// launch scripts megatron_defaults follows.
void megatron_core_defaults(MeasuredRun& r, std::vector<std::string>& assumed) {
  if (framework_has(r, "megatron-bridge") && !r.checkpointing && recipe_recompute(r, assumed)) return;
  if (framework_has(r, "megatron-bridge"))
    fill<std::string>(r.checkpointing, "none", "activation checkpointing",
                      "Megatron-Bridge's performance presets recompute only where a preset says so "
                      "(scripts/performance/configs/llama/llama3_workload_base_configs.py @ 00919dcf: of the "
                      "Llama 3 pretraining presets only H100 FP8-CS 8B recomputes, 5 layers; "
                      "configs/deepseek/deepseek_workload_base_configs.py @ 04264182 names recompute_modules such "
                      "as mla_up_proj, mlp and moe_act); a partial recompute is predicted without it",
                      assumed);
  else
    fill<std::string>(r.checkpointing, "none", "activation checkpointing",
                      "NeMo-Framework-Launcher's training configs of NeMo 24.07 (tag 24.07 @ 8325688d) set "
                      "activations_checkpoint_granularity null, as data/validation/nemo-h100.jsonl records",
                      assumed);
}

/// Megatron-LM and Megatron-DeepSpeed (BigScience).
void megatron_defaults(MeasuredRun& r, std::vector<std::string>& assumed) {
  fill<std::string>(r.checkpointing, "full", "activation checkpointing",
                    "Megatron's published TFLOP/s count a recomputed forward (Narayanan et al. SC'21, "
                    "96·B·s·L·h² FLOPs per step), and BigScience's tr11-176B-ml.slurm passes "
                    "--checkpoint-activations",
                    assumed);
  fill<std::int64_t>(r.micro_batch, 1, "micro-batch",
                     "Megatron-LM's GPT-3 175B example (examples/pretrain_gpt3_175B.sh, --micro-batch-size 1)",
                     assumed);
  // Narayanan et al. SC'21 Table 1: the GPT models from 7.5B to 310B have 128-wide heads;
  // only the attention kernel's rate depends on the width, not the FLOPs. A model of the
  // catalog keeps its own head count (its source names it).
  if (!r.heads && r.hidden && *r.hidden % 128 == 0 && find_model(r.model_name) == nullptr)
    fill<std::int64_t>(r.heads, *r.hidden / 128, "attention heads",
                       "hidden / 128, the head width of Narayanan et al. SC'21 Table 1's GPT models", assumed);
  if (framework_has(r, "deepspeed"))
    fill<std::string>(r.precision, "bf16_mixed", "precision",
                      "BigScience's tr11-176B-ml.slurm passes --bf16 (on the A100 bf16 and fp16 have one "
                      "tensor-core rate)",
                      assumed);
}

/// metaseq (OPT): the launcher's settings (metaseq/launcher/opt_baselines.py @ 08c22746)
/// and the model-parallel degree by size (opt_job_constants.py @ 0580bd7d); the batch in
/// tokens of OPT-175B and OPT-66B from Zhang et al. 2022, Table 1 (2M tokens).
void metaseq_defaults(MeasuredRun& r, std::vector<std::string>& assumed) {
  fill<std::string>(r.checkpointing, "full", "activation checkpointing",
                    "metaseq's OPT launcher passes --checkpoint-activations (opt_baselines.py)", assumed);
  fill<std::string>(r.offload, "none", "CPU offload", "metaseq's OPT launcher offloads nothing (opt_baselines.py)",
                    assumed);
  fill<std::int64_t>(r.grad_accum, 1, "gradient accumulation", "metaseq's OPT launcher sets --update-freq 1", assumed);
  if (!r.hidden || (*r.hidden != 12288 && *r.hidden != 9216)) return;  // OPT-175B, OPT-66B
  fill<std::int64_t>(r.tp, 8, "tensor parallel degree",
                     "metaseq's opt_job_constants.py runs OPT-66B and OPT-175B at model_parallel 8", assumed);
  if (r.micro_batch || !r.gpus || !r.seq_len || *r.seq_len <= 0 || *r.gpus % (*r.tp * r.pp.value_or(1)) != 0) return;
  // The launcher's per-replica batch: batch tokens // data-parallel ranks // sequence length.
  constexpr std::int64_t kBatchTokens = std::int64_t{2} * 1024 * 1024;
  const std::int64_t replicas = *r.gpus / (*r.tp * r.pp.value_or(1));
  if (const std::int64_t per_replica = kBatchTokens / replicas / *r.seq_len; per_replica >= 1)
    fill<std::int64_t>(r.micro_batch, per_replica, "micro-batch",
                       "the OPT paper's 2M-token batch (Zhang et al. 2022, Table 1) over the data-parallel ranks, "
                       "as metaseq's launcher divides it (batch tokens // ranks // sequence length)",
                       assumed);
}

/// nanotron as the Ultra-Scale Playbook's sweep ran it: bench_cluster's config template
/// (huggingface/bench_cluster, bench_cluster/template/base_config.py @ 2e2b026) sets
/// tp_mode REDUCE_SCATTER, nanotron's sequence-parallel linear layers (all-gather before the
/// column-parallel GEMMs, reduce-scatter after the row-parallel ones).
void nanotron_defaults(MeasuredRun& r, std::vector<std::string>& assumed) {
  if (r.tp && *r.tp > 1)
    fill<bool>(r.sp, true, "sequence parallelism",
               "bench_cluster's nanotron template sets tp_mode REDUCE_SCATTER (base_config.py @ 2e2b026), "
               "nanotron's sequence-parallel TP",
               assumed);
}

}  // namespace

std::string RecipeRuntime::source() const {
  return fmt::format("Megatron-Bridge {} @ {} ({}; data/recipes/megatron-bridge-runtime.jsonl)", rev,
                     commit.substr(0, 8), config);
}

const RecipeRuntime* recipe_runtime(const std::string& id) {
  const auto it = runtime_table().find(id);
  return it == runtime_table().end() ? nullptr : &it->second;
}

void apply_framework_defaults(MeasuredRun& run, std::vector<std::string>& assumed) {
  if (framework_has(run, "megatron-bridge") || framework_has(run, "nemo")) megatron_core_defaults(run, assumed);
  if (framework_has(run, "megatron") && !framework_has(run, "metaseq")) megatron_defaults(run, assumed);
  if (framework_has(run, "metaseq")) metaseq_defaults(run, assumed);
  if (framework_has(run, "nanotron")) nanotron_defaults(run, assumed);
}

}  // namespace stepcast
