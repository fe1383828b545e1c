"""Tiny Hugging Face models built offline (no downloads): a Qwen2 byte-level BPE tokenizer trained on
SimDroid text with a ChatML template, a Qwen2 causal LM, a LLaVA-style VLM (CLIP vision tower + Qwen2 text
model), a Qwen3-VL (the paper's model class: vision start/pad/end tokens, `image_grid_thw`, dynamic
resolution, multimodal RoPE) and a Qwen2.5-VL (the same interface; a windowed-attention vision tower with a
gated MLP). Tests and smoke runs use them so that `HFPolicy` runs the same code path as a
real Qwen checkpoint, in seconds on a CPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (
    CLIPVisionConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2Tokenizer,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
)
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

from algos.policies.hf import qwen_vl_processor
from algos.prompt import SYSTEM, PolicyInput, render_prompt, render_response

PAD, IM_START, IM_END, IMAGE = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>"
# Qwen-VL's vision tokens: a screenshot is <|vision_start|>, an <|image_pad|> per merged patch, <|vision_end|>
VISION_START, VISION_END = "<|vision_start|>", "<|vision_end|>"
IMAGE_PAD, VIDEO_PAD = "<|image_pad|>", "<|video_pad|>"
QWEN_VL_PATCH = 8  # the tiny Qwen3-VL's patch side (the real one's is 16); 2x2 patches merge into one token
QWEN_VL_MIN_PIXELS = 16 * 16  # its processor's default pixel budget: a 54x120 SimDroid frame (render
QWEN_VL_MAX_PIXELS = 64 * 64  # scale 0.05) becomes 32x80 pixels, 40 patches, 10 image tokens
VOCAB_SIZE = 1024
IMAGE_SIZE = 32  # pixels per side the tiny CLIP tower sees
PATCH_SIZE = 8  # -> (32 / 8)^2 = 16 image tokens per screenshot
CORPUS_TASKS = ("SystemWifiTurnOn", "MarkorCreateNote", "ContactsAddContact", "SimpleSmsSend",
                "ExpenseAddSingle")

# ChatML, as Qwen writes it. Content is a string or a list of {"type": "text"|"image"} parts (VLM messages);
# the {% generation %} markers let TRL's assistant_only_loss find the assistant tokens.
_CHATML = (
    "{%- macro content(c) -%}"
    "{%- if c is string -%}{{- c -}}"
    "{%- else -%}{%- for part in c -%}"
    "{%- if part['type'] == 'image' -%}{{- 'IMAGE_PART' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}{{- content(message['content']) + '<|im_end|>' -}}{%- endgeneration -%}"
    "{%- else -%}{{- content(message['content']) + '<|im_end|>' -}}{%- endif -%}"
    "{{- '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
CHAT_TEMPLATE = _CHATML.replace("IMAGE_PART", IMAGE)
# Qwen-VL's image part, as Qwen3-VL's own template writes it; the processor expands the pad token to one per
# merged patch of the resized screenshot
QWEN_VL_CHAT_TEMPLATE = _CHATML.replace("IMAGE_PART", VISION_START + IMAGE_PAD + VISION_END)


def expert_samples(tasks: tuple[str, ...] | list[str] = CORPUS_TASKS, seed: int = 0, pixels: bool = False,
                   render_scale: float = 0.05, max_steps: int = 12) -> list[tuple[PolicyInput, str]]:
    """(input, expert response) pairs from one SimDroid expert episode per task: offline."""
    from voyager_gym.actions import parse_action
    from voyager_gym.env import VoyagerEnv

    mode = "full" if pixels else "elements"
    env = VoyagerEnv(observation_mode=mode, noise="none", render_scale=render_scale)
    out: list[tuple[PolicyInput, str]] = []
    try:
        for task in tasks:
            obs, _ = env.reset(seed=seed, options={"task": task})
            history: list[str] = []
            for step in range(max_steps):
                x = PolicyInput.from_obs(obs, history, step=step, max_steps=max_steps)
                action = parse_action(env.unwrapped.expert_action())
                out.append((x, render_response(action)))
                obs, _, term, trunc, _ = env.step(action.to_json())
                history.append(action.to_json())
                if term or trunc:
                    break
    finally:
        env.close()
    return out


def default_corpus() -> list[str]:
    """Tokenizer training texts: the system text (once per prompt, as in chats), prompts and responses."""
    samples = expert_samples()
    return [SYSTEM] * len(samples) + [render_prompt(x) for x, _ in samples] + [r for _, r in samples]


def build_tiny_tokenizer(corpus: list[str] | None = None, vocab_size: int = VOCAB_SIZE) -> Qwen2Tokenizer:
    """A Qwen2 tokenizer (Qwen's normaliser and pre-tokenizer, byte-level BPE: any text encodes) trained on a
    small corpus, with ChatML special tokens and chat template; it reloads as the same class and splits."""
    probe = Qwen2Tokenizer()  # Qwen's normaliser and pre-tokenizer, so training splits text the same way
    tok = Tokenizer(models.BPE())
    tok.normalizer = probe.backend_tokenizer.normalizer
    tok.pre_tokenizer = probe.backend_tokenizer.pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PAD, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus if corpus is not None else default_corpus(), trainer=trainer)
    return _qwen2_tokenizer(tok, [IM_START, IM_END])


def _qwen2_tokenizer(bpe: Tokenizer, specials: list[str]) -> Qwen2Tokenizer:
    """Wrap a trained BPE's vocab and merges as a Qwen2Tokenizer with ChatML tokens and template."""
    state = json.loads(bpe.to_str())["model"]
    return Qwen2Tokenizer(vocab=state["vocab"], merges=[tuple(m) for m in state["merges"]], eos_token=IM_END,
                          pad_token=PAD, unk_token=None, extra_special_tokens=specials,
                          chat_template=CHAT_TEMPLATE, padding_side="left", model_max_length=8192)


def _text_config(tokenizer: Qwen2Tokenizer, hidden_size: int = 64, layers: int = 2) -> Qwen2Config:
    return Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                       num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=8192, tie_word_embeddings=True, bos_token_id=None,
                       pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)


def _finish(model: torch.nn.Module, tokenizer: Qwen2Tokenizer) -> None:
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    model.eval()


def build_tiny_causal_lm(tokenizer: Qwen2Tokenizer, seed: int = 0, hidden_size: int = 64,
                         layers: int = 2) -> Qwen2ForCausalLM:
    """A ~0.1M-parameter Qwen2 causal LM (hidden 64, 2 layers) with random weights from `seed`."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(_text_config(tokenizer, hidden_size, layers))
    _finish(model, tokenizer)
    return model


def build_tiny_vlm(tokenizer: Qwen2Tokenizer, seed: int = 0
                   ) -> tuple[LlavaForConditionalGeneration, LlavaProcessor]:
    """A LLaVA-style VLM (1-layer CLIP tower on 32x32 images + tiny Qwen2) and its processor.

    The tokenizer is copied and extended with an `<image>` token; Qwen2-VL processors need torchvision, which
    does not import here, so tests use LLaVA's."""
    tokenizer = _qwen2_tokenizer(tokenizer.backend_tokenizer, [IM_START, IM_END, IMAGE])
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE,
                              projection_dim=32)
    config = LlavaConfig(vision_config=vision, text_config=_text_config(tokenizer),
                         image_token_index=tokenizer.convert_tokens_to_ids(IMAGE), vision_feature_layer=-1,
                         vision_feature_select_strategy="default", projector_hidden_act="gelu",
                         tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    _finish(model, tokenizer)
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": IMAGE_SIZE},
                                            crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=PATCH_SIZE,
                               vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
                               image_token=IMAGE, num_additional_image_tokens=1)
    return model, processor


def _vision_token_ids(tokenizer: Qwen2Tokenizer) -> dict[str, int]:
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (IMAGE_PAD, VIDEO_PAD, VISION_START, VISION_END)}
    missing = [t for t, i in ids.items() if i is None or i == tokenizer.unk_token_id]
    if missing:
        raise ValueError(f"the tokenizer lacks Qwen-VL's tokens {missing}; build it with qwen_vl_tokenizer")
    return ids


def qwen3_vl_config(tokenizer: Qwen2Tokenizer, hidden_size: int = 64, layers: int = 2, heads: int = 4,
                    kv_heads: int = 2, intermediate_size: int | None = None, head_dim: int = 16,
                    vision: dict[str, Any] | None = None) -> Qwen3VLConfig:
    """A Qwen3-VL config for `tokenizer` (which holds the vision tokens). Defaults: a ~0.2M-parameter model
    (hidden 64, 2 layers; a 2-block vision tower of width 32 on 8-pixel patches). `qwen3_vl_4b_config`
    gives the real 4B's shape."""
    ids = _vision_token_ids(tokenizer)
    half = head_dim // 2  # multimodal RoPE: the rotary pairs split over (time, height, width), as Qwen3-VL's
    section = [half - 2 * (half * 5 // 16), half * 5 // 16, half * 5 // 16]  # [24, 20, 20] at head_dim 128
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden_size,
                intermediate_size=intermediate_size or 2 * hidden_size, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                max_position_embeddings=8192, tie_word_embeddings=True, bos_token_id=None,
                rope_parameters=dict(rope_type="default", rope_theta=5e6, mrope_section=section,
                                     mrope_interleaved=True),
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = vision or dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                            num_position_embeddings=64, patch_size=QWEN_VL_PATCH,
                            deepstack_visual_indexes=[0])
    vision = dict(temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=hidden_size, **vision)
    return Qwen3VLConfig(text_config=text, vision_config=vision, image_token_id=ids[IMAGE_PAD],
                         video_token_id=ids[VIDEO_PAD], vision_start_token_id=ids[VISION_START],
                         vision_end_token_id=ids[VISION_END], tie_word_embeddings=True)


def qwen3_vl_4b_config(tokenizer: Qwen2Tokenizer) -> Qwen3VLConfig:
    """Qwen3-VL-4B-Instruct's shape (its config.json: text hidden 2560, 36 layers, 32 heads / 8 KV heads of
    128, intermediate 9728; vision tower 24 blocks of width 1024 on 16-pixel patches, deepstack at 5/11/17)
    with `tokenizer`'s vocabulary: random weights for throughput and memory figures without a download. The
    real vocabulary (151,936) adds ~0.4B embedding parameters, tied; pass a tokenizer that big to match."""
    vision = dict(depth=24, hidden_size=1024, intermediate_size=4096, num_heads=16, patch_size=16,
                  num_position_embeddings=2304, deepstack_visual_indexes=[5, 11, 17],
                  hidden_act="gelu_pytorch_tanh")
    return qwen3_vl_config(tokenizer, hidden_size=2560, layers=36, heads=32, kv_heads=8,
                           intermediate_size=9728, head_dim=128, vision=vision)


def qwen2_5_vl_config(tokenizer: Qwen2Tokenizer, hidden_size: int = 64, layers: int = 2) -> Qwen2_5_VLConfig:
    """A ~0.2M-parameter Qwen2.5-VL config for `tokenizer` (from `qwen_vl_tokenizer`): text hidden 64, 2
    layers, head_dim 16 with Qwen2.5-VL's multimodal RoPE split in its proportions (16:24:24 of 64 rotary
    pairs at head_dim 128 -> 2:3:3 of 8); a 2-block vision tower of width 32 on 8-pixel patches, windowed
    attention over 2x2 merged tokens in block 0, full attention in block 1 (as the real tower alternates)."""
    ids = _vision_token_ids(tokenizer)
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                max_position_embeddings=8192, bos_token_id=None,
                rope_parameters=dict(rope_type="default", rope_theta=1e6, mrope_section=[2, 3, 3]),
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=QWEN_VL_PATCH,
                  window_size=4 * QWEN_VL_PATCH, fullatt_block_indexes=[1], out_hidden_size=hidden_size,
                  spatial_merge_size=2, temporal_patch_size=2)
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=ids[IMAGE_PAD],
                            video_token_id=ids[VIDEO_PAD], vision_start_token_id=ids[VISION_START],
                            vision_end_token_id=ids[VISION_END], tie_word_embeddings=True)


def qwen_vl_tokenizer(tokenizer: Qwen2Tokenizer) -> Qwen2Tokenizer:
    """A copy of the tiny tokenizer with Qwen-VL's vision tokens and image chat template added."""
    specials = [IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD]
    tok = _qwen2_tokenizer(tokenizer.backend_tokenizer, specials)
    tok.chat_template = QWEN_VL_CHAT_TEMPLATE
    return tok


def tiny_qwen_vl_processor(tokenizer: Qwen2Tokenizer, patch_size: int = QWEN_VL_PATCH,
                           min_pixels: int = QWEN_VL_MIN_PIXELS,
                           max_pixels: int = QWEN_VL_MAX_PIXELS, model_type: str = "qwen3_vl") -> Any:
    """Qwen-VL's processor for `model_type` (its image processor: dynamic resolution within [min_pixels,
    max_pixels], sides multiples of patch x merge) over a tokenizer from `qwen_vl_tokenizer`."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    image_processor = Qwen2VLImageProcessorPil(
        patch_size=patch_size, temporal_patch_size=2, merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3,
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels})
    return qwen_vl_processor(image_processor, tokenizer, QWEN_VL_CHAT_TEMPLATE, model_type)


def build_tiny_qwen3_vl(tokenizer: Qwen2Tokenizer, seed: int = 0, config: Qwen3VLConfig | None = None,
                        dtype: torch.dtype | None = None
                        ) -> tuple[Qwen3VLForConditionalGeneration, Any]:
    """A Qwen3-VL with random weights from `seed` and its processor (`tiny_qwen_vl_processor`, hf.py's
    `QwenVLImagesProcessor`; the patch side
    follows `config`, e.g. `qwen3_vl_4b_config` for the 4B's shape). `tokenizer` is the plain tiny one."""
    tokenizer = qwen_vl_tokenizer(tokenizer)
    config = config or qwen3_vl_config(tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3VLForConditionalGeneration(config)
    if dtype is not None:
        model = model.to(dtype)
    _finish(model, tokenizer)
    patch = config.vision_config.patch_size
    scale = (patch // QWEN_VL_PATCH) ** 2
    return model, tiny_qwen_vl_processor(tokenizer, patch, QWEN_VL_MIN_PIXELS * scale,
                                         QWEN_VL_MAX_PIXELS * scale)


def build_tiny_qwen2_5_vl(tokenizer: Qwen2Tokenizer, seed: int = 0
                          ) -> tuple[Qwen2_5_VLForConditionalGeneration, Any]:
    """A Qwen2.5-VL (`qwen2_5_vl_config`) with random weights from `seed` and its processor (hf.py's
    `QwenVLImagesProcessor` over Qwen2.5-VL's processor class; the same image processor and budget as the
    tiny Qwen3-VL). `tokenizer` is the plain tiny one."""
    tokenizer = qwen_vl_tokenizer(tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(qwen2_5_vl_config(tokenizer))
    _finish(model, tokenizer)
    return model, tiny_qwen_vl_processor(tokenizer, model_type="qwen2_5_vl")


# `policy.hf_model` names built offline
TINY_MODELS = ("tiny-lm", "tiny-vlm", "tiny-qwen3-vl", "tiny-qwen2.5-vl")


def build_named(name: str, seed: int = 0) -> tuple[torch.nn.Module, Any]:
    """(model, processor) of a tiny model by its `policy.hf_model` name (TINY_MODELS)."""
    tokenizer = build_tiny_tokenizer()
    if name == "tiny-lm":
        return build_tiny_causal_lm(tokenizer, seed), tokenizer
    if name == "tiny-vlm":
        return build_tiny_vlm(tokenizer, seed)
    if name == "tiny-qwen3-vl":
        return build_tiny_qwen3_vl(tokenizer, seed)
    if name == "tiny-qwen2.5-vl":
        return build_tiny_qwen2_5_vl(tokenizer, seed)
    raise ValueError(f"unknown tiny model {name!r}; expected one of {', '.join(TINY_MODELS)}")


def save_tiny(path: str | Path, kind: str = "lm", seed: int = 0) -> Path:
    """Write a tiny model + tokenizer/processor directory that loads like a real checkpoint (kind lm, vlm,
    qwen3-vl or qwen2.5-vl)."""
    kinds = [m.removeprefix("tiny-") for m in TINY_MODELS]
    if kind not in kinds:
        raise ValueError(f"kind must be one of {', '.join(kinds)}, got {kind!r}")
    path = Path(path)
    model, processor = build_named(f"tiny-{kind}", seed)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
