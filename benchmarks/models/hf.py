"""Hugging Face transformers models of the suite, built from configs with explicit sizes
and random weights (nothing is downloaded), and their inputs.

Each entry names a config class, a model class, the kind of inputs it takes, the
config's sizes (a published checkpoint's, with fewer layers for the decoder LLMs) and
a tiny override of them, so that tests and CPU smoke runs build every model in seconds.
Dropout is off (eval mode) and the KV cache is not returned (use_cache=False), as in
PyTorch's huggingface.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

# Token ids 0-2 are the special tokens of the tiny configs; inputs draw from 3 up.
SPECIAL_TOKENS = 3
TINY_VOCAB = 256
# The tiny vocabulary must hold the special tokens (an embedding's padding index).
TINY_TOKEN_IDS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2,
                  "decoder_start_token_id": 0}
TINY_TEXT = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 128, "vocab_size": TINY_VOCAB, "max_position_embeddings": 128}
TINY_DECODER = TINY_TEXT | {"num_key_value_heads": 2, "head_dim": 16}
TINY_IMAGE = 32
TINY_BATCH = 2
TINY_TOKENS = 16


@dataclass(frozen=True)
class HFModel:
    config: str                 # transformers config class
    model: str                  # transformers model class
    inputs: str                 # text, seq2seq, image or speech
    sizes: dict                 # the config's keyword arguments
    tiny: dict = field(default_factory=dict)  # overrides for tests and smoke runs


MODELS = {
    "hf_gpt2": HFModel("GPT2Config", "GPT2LMHeadModel", "text", {
        "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
        {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": TINY_VOCAB, "n_positions": 128}),
    "hf_bert": HFModel("BertConfig", "BertForMaskedLM", "text", {
        "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512},
        TINY_TEXT),
    "hf_roberta": HFModel("RobertaConfig", "RobertaForMaskedLM", "text", {
        "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 50265, "max_position_embeddings": 514,
        "pad_token_id": 1}, TINY_TEXT | {"max_position_embeddings": 130}),
    "hf_distilbert": HFModel("DistilBertConfig", "DistilBertForMaskedLM", "text", {
        "n_layers": 6, "dim": 768, "n_heads": 12, "hidden_dim": 3072, "vocab_size": 30522,
        "max_position_embeddings": 512},
        {"n_layers": 2, "dim": 64, "n_heads": 4, "hidden_dim": 128, "vocab_size": TINY_VOCAB,
         "max_position_embeddings": 128}),
    "hf_albert": HFModel("AlbertConfig", "AlbertForMaskedLM", "text", {
        "num_hidden_layers": 12, "embedding_size": 128, "hidden_size": 768,
        "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30000,
        "max_position_embeddings": 512}, TINY_TEXT | {"embedding_size": 32}),
    "hf_electra": HFModel("ElectraConfig", "ElectraForPreTraining", "text", {
        "num_hidden_layers": 12, "embedding_size": 768, "hidden_size": 768,
        "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
        "max_position_embeddings": 512}, TINY_TEXT | {"embedding_size": 64}),
    "hf_deberta_v2": HFModel("DebertaV2Config", "DebertaV2ForMaskedLM", "text", {
        # deberta-v3-base: relative attention over 256 log buckets, no absolute positions
        "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 128100, "max_position_embeddings": 512,
        "relative_attention": True, "position_buckets": 256, "pos_att_type": ["p2c", "c2p"],
        "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False},
        TINY_TEXT | {"position_buckets": 16}),
    "hf_mobilebert": HFModel("MobileBertConfig", "MobileBertForMaskedLM", "text", {
        "num_hidden_layers": 24, "hidden_size": 512, "embedding_size": 128,
        "intra_bottleneck_size": 128, "num_attention_heads": 4, "intermediate_size": 512,
        "num_feedforward_networks": 4, "vocab_size": 30522, "max_position_embeddings": 512},
        {"num_hidden_layers": 2, "hidden_size": 64, "embedding_size": 32,
         "intra_bottleneck_size": 32, "num_attention_heads": 4, "intermediate_size": 64,
         "num_feedforward_networks": 2, "vocab_size": TINY_VOCAB, "max_position_embeddings": 128}),
    "hf_t5": HFModel("T5Config", "T5ForConditionalGeneration", "seq2seq", {
        # t5-small
        "num_layers": 6, "num_decoder_layers": 6, "d_model": 512, "d_ff": 2048, "num_heads": 8,
        "d_kv": 64, "vocab_size": 32128, "decoder_start_token_id": 0},
        {"num_layers": 2, "num_decoder_layers": 2, "d_model": 64, "d_ff": 128, "num_heads": 4,
         "d_kv": 16, "vocab_size": TINY_VOCAB}),
    "hf_bart": HFModel("BartConfig", "BartForConditionalGeneration", "seq2seq", {
        "encoder_layers": 6, "decoder_layers": 6, "d_model": 768, "encoder_ffn_dim": 3072,
        "decoder_ffn_dim": 3072, "encoder_attention_heads": 12, "decoder_attention_heads": 12,
        "vocab_size": 50265, "max_position_embeddings": 1024},
        {"encoder_layers": 2, "decoder_layers": 2, "d_model": 64, "encoder_ffn_dim": 128,
         "decoder_ffn_dim": 128, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
         "vocab_size": TINY_VOCAB, "max_position_embeddings": 128}),
    "hf_opt": HFModel("OPTConfig", "OPTForCausalLM", "text", {
        # opt-125m
        "num_hidden_layers": 12, "hidden_size": 768, "ffn_dim": 3072, "num_attention_heads": 12,
        "word_embed_proj_dim": 768, "vocab_size": 50272, "max_position_embeddings": 2048},
        {"num_hidden_layers": 2, "hidden_size": 64, "ffn_dim": 128, "num_attention_heads": 4,
         "word_embed_proj_dim": 64, "vocab_size": TINY_VOCAB, "max_position_embeddings": 128}),
    "hf_gpt_neox": HFModel("GPTNeoXConfig", "GPTNeoXForCausalLM", "text", {
        # pythia-160m: parallel residual, rotary on a quarter of each head
        "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 50304, "max_position_embeddings": 2048,
        "rotary_pct": 0.25}, TINY_TEXT),
    "hf_llama": HFModel("LlamaConfig", "LlamaForCausalLM", "text", {
        # TinyLlama-1.1B's width (grouped-query attention, 4 KV heads), 4 of its 22 layers
        "num_hidden_layers": 4, "hidden_size": 2048, "intermediate_size": 5632,
        "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000,
        "max_position_embeddings": 2048}, TINY_DECODER),
    "hf_mistral": HFModel("MistralConfig", "MistralForCausalLM", "text", {
        # Mistral-7B's width, 4 of its 32 layers
        "num_hidden_layers": 4, "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
        "max_position_embeddings": 4096, "sliding_window": 4096}, TINY_DECODER),
    "hf_qwen2": HFModel("Qwen2Config", "Qwen2ForCausalLM", "text", {
        # Qwen2-0.5B's width (biased q/k/v, 2 KV heads, tied embeddings), 6 of its 24 layers
        "num_hidden_layers": 6, "hidden_size": 896, "intermediate_size": 4864,
        "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
        "max_position_embeddings": 4096, "tie_word_embeddings": True}, TINY_DECODER),
    "hf_gemma": HFModel("GemmaConfig", "GemmaForCausalLM", "text", {
        # gemma-2b's width (one KV head of 256), 4 of its 18 layers
        "num_hidden_layers": 4, "hidden_size": 2048, "intermediate_size": 16384,
        "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
        "vocab_size": 256000, "max_position_embeddings": 8192}, TINY_DECODER),
    "hf_phi": HFModel("PhiConfig", "PhiForCausalLM", "text", {
        # phi-2's width (rotary on 40% of each head), 4 of its 32 layers
        "num_hidden_layers": 4, "hidden_size": 2560, "intermediate_size": 10240,
        "num_attention_heads": 32, "vocab_size": 51200, "max_position_embeddings": 2048,
        "partial_rotary_factor": 0.4}, TINY_TEXT),
    "hf_whisper": HFModel("WhisperConfig", "WhisperForConditionalGeneration", "speech", {
        # whisper-base: 30 s of 80 mel bins (3000 frames) into the encoder
        "encoder_layers": 6, "decoder_layers": 6, "d_model": 512, "encoder_ffn_dim": 2048,
        "decoder_ffn_dim": 2048, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
        "vocab_size": 51865, "num_mel_bins": 80, "max_source_positions": 1500,
        "max_target_positions": 448},
        {"encoder_layers": 2, "decoder_layers": 2, "d_model": 64, "encoder_ffn_dim": 128,
         "decoder_ffn_dim": 128, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
         "vocab_size": TINY_VOCAB, "num_mel_bins": 16, "max_source_positions": 16,
         "max_target_positions": 64}),
    "hf_vit": HFModel("ViTConfig", "ViTForImageClassification", "image", {
        "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
        "intermediate_size": 3072, "image_size": 224, "patch_size": 16, "num_labels": 1000},
        {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
         "intermediate_size": 128, "image_size": TINY_IMAGE, "patch_size": 8, "num_labels": 10}),
    "hf_convnext": HFModel("ConvNextConfig", "ConvNextForImageClassification", "image", {
        "depths": [3, 3, 9, 3], "hidden_sizes": [96, 192, 384, 768], "num_labels": 1000},
        {"depths": [1, 1], "hidden_sizes": [16, 32], "num_stages": 2, "num_labels": 10}),
    "hf_swin": HFModel("SwinConfig", "SwinForImageClassification", "image", {
        "embed_dim": 96, "depths": [2, 2, 6, 2], "num_heads": [3, 6, 12, 24], "window_size": 7,
        "image_size": 224, "num_labels": 1000},
        {"embed_dim": 16, "depths": [1, 1], "num_heads": [2, 4], "window_size": 4,
         "image_size": TINY_IMAGE, "patch_size": 2, "num_labels": 10}),
    "hf_resnet": HFModel("ResNetConfig", "ResNetForImageClassification", "image", {
        "embedding_size": 64, "hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3],
        "layer_type": "bottleneck", "num_labels": 1000},
        {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1],
         "layer_type": "basic", "num_labels": 10}),
    "hf_mobilenet_v2": HFModel("MobileNetV2Config", "MobileNetV2ForImageClassification", "image", {
        "depth_multiplier": 1.0, "image_size": 224, "num_labels": 1001},
        {"depth_multiplier": 0.25, "image_size": TINY_IMAGE, "num_labels": 10}),
    "hf_dinov2": HFModel("Dinov2Config", "Dinov2Model", "image", {
        # dinov2-small at 224 x 224: 16 x 16 patches of 14
        "num_hidden_layers": 12, "hidden_size": 384, "num_attention_heads": 6,
        "image_size": 224, "patch_size": 14},
        {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
         "image_size": TINY_IMAGE, "patch_size": 8}),
    "hf_mobilevit": HFModel("MobileViTConfig", "MobileViTForImageClassification", "image", {
        # mobilevit-small
        "image_size": 256, "hidden_sizes": [144, 192, 240],
        "neck_hidden_sizes": [16, 32, 64, 96, 128, 160, 640], "num_labels": 1000},
        {"image_size": TINY_IMAGE, "hidden_sizes": [16, 16, 16],
         "neck_hidden_sizes": [8, 8, 16, 16, 16, 16, 32], "num_labels": 10}),
    "hf_segformer": HFModel("SegformerConfig", "SegformerForSemanticSegmentation", "image", {
        # segformer-b0, ADE20k's 150 classes
        "depths": [2, 2, 2, 2], "hidden_sizes": [32, 64, 160, 256],
        "decoder_hidden_size": 256, "num_labels": 150},
        {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 16, 32],
         "num_attention_heads": [1, 2, 2, 4], "decoder_hidden_size": 32, "num_labels": 10}),
}


def build_config(name: str, tiny: bool = False):
    import transformers  # here: importing transformers takes seconds, vision runs skip it

    entry = MODELS[name]
    sizes = entry.sizes
    if tiny:
        sizes = sizes | entry.tiny | (TINY_TOKEN_IDS if entry.inputs != "image" else {})
    config = getattr(transformers, entry.config)(**sizes)
    if hasattr(config, "use_cache"):
        config.use_cache = False
    return config


def build_model(name: str, tiny: bool = False) -> nn.Module:
    """The model with random weights (the current seed's) and dropout off."""
    import transformers

    model_class = getattr(transformers, MODELS[name].model)
    return model_class(build_config(name, tiny)).eval()


def token_ids(config, batch: int, length: int, device) -> torch.Tensor:
    return torch.randint(SPECIAL_TOKENS, config.vocab_size, (batch, length), device=device)


def build_inputs(name: str, config, batch: int, size: int, device) -> dict:
    """Keyword inputs of one forward call: `size` tokens, or `size` x `size` pixels."""
    kind = MODELS[name].inputs
    if kind == "text":
        return {"input_ids": token_ids(config, batch, size, device)}
    if kind == "seq2seq":
        ids = token_ids(config, batch, size, device)
        return {"input_ids": ids, "decoder_input_ids": ids}
    if kind == "speech":
        frames = 2 * config.max_source_positions  # the encoder's two convolutions halve them
        return {"input_features": torch.randn(batch, config.num_mel_bins, frames, device=device),
                "decoder_input_ids": token_ids(config, batch, size, device)}
    return {"pixel_values": torch.randn(batch, config.num_channels, size, size, device=device)}


def training_labels(name: str, config, inputs: dict, device) -> dict:
    """The `labels` of a training step, from which the model computes its own loss, as
    PyTorch's huggingface.py passes them: the input tokens (language models; a seq2seq
    or speech model's decoder tokens), one class per image or per pixel (segmentation),
    a 0 or 1 per token (ELECTRA's replaced-token detection). A model without a loss
    head (Dinov2Model) has no training row."""
    entry = MODELS[name]
    if entry.model == "Dinov2Model":
        raise ValueError(f"{name} ({entry.model}) has no loss head to train")
    if entry.model == "ElectraForPreTraining":
        return {"labels": torch.randint(2, inputs["input_ids"].shape, device=device)}
    if entry.inputs == "image":
        pixels = inputs["pixel_values"]
        shape = (pixels.shape[0], *pixels.shape[2:]) if "Segmentation" in entry.model else (
            pixels.shape[0],)
        return {"labels": torch.randint(config.num_labels, shape, device=device)}
    return {"labels": inputs.get("decoder_input_ids", inputs.get("input_ids"))}
