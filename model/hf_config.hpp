/// \file
/// A transformer's shape read from a Hugging Face `config.json` (the file every model on the
/// Hub ships with), offline. Reads the keys of the dense decoder architectures stepcast can
/// represent: Llama, Mistral (and Mistral Nemo), Qwen2, Qwen3, Gemma/Gemma 2/Gemma 3 text,
/// Phi-3 and Phi-4 (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
/// `num_key_value_heads`, `head_dim`, `intermediate_size`, `vocab_size`, ...), GPT-2
/// (`n_embd`, `n_layer`, `n_head`, `n_positions`), GPT-NeoX, Falcon, MPT (`d_model`,
/// `n_heads`, `n_layers`, `expansion_ratio`) and Phi. Key names and defaults are those of
/// the architectures' configuration classes in huggingface/transformers
/// (src/transformers/models/<arch>/configuration_<arch>.py).
///
/// An explicit `head_dim` other than hidden_size / num_attention_heads (Gemma 7B, Gemma 2,
/// Mistral Nemo, Qwen3) becomes the spec's head_width. Refused, with an InputError naming
/// the file and the JSON path of the key: architectures it does not know (`/model_type`;
/// a multimodal "gemma3" config is refused with the hint to give its gemma3_text part) and
/// mixture-of-experts configs (`/num_local_experts`, `/num_experts`, ...: MoE is not
/// modelled yet).
#pragma once

#include "model/transformer.hpp"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string>

namespace stepcast {

/// The shape a `config.json` describes. `file` names the source in errors and becomes
/// spec.source; spec.name is the file's stem (its folder's name for a file called
/// config.json) and `_name_or_path`, when given, an alias. No published_params.
TransformerSpec spec_from_hf_config(const nlohmann::json& config, const std::string& file);

/// Reads `path` (JsonDoc::load: strict JSON, bounded size) and calls spec_from_hf_config.
TransformerSpec load_hf_config(const std::filesystem::path& path);

}  // namespace stepcast
