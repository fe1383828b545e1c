"""Tiny Hugging Face models built offline (no downloads): a Qwen2 byte-level BPE tokenizer trained on
SimDroid text with a ChatML template, a Qwen2 causal LM and a LLaVA-style VLM (CLIP vision tower + Qwen2 text
model). Tests and smoke runs use them so that `HFPolicy` runs the same code path as a real Qwen checkpoint, in
seconds on a CPU."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (
    CLIPVisionConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2Tokenizer,
)
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

from algos.prompt import SYSTEM, PolicyInput, render_prompt, render_response

PAD, IM_START, IM_END, IMAGE = "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>"
VOCAB_SIZE = 1024
IMAGE_SIZE = 32  # pixels per side the tiny CLIP tower sees
PATCH_SIZE = 8  # -> (32 / 8)^2 = 16 image tokens per screenshot
CORPUS_TASKS = ("SystemWifiTurnOn", "MarkorCreateNote", "ContactsAddContact", "SimpleSmsSend",
                "ExpenseAddSingle")

# ChatML, as Qwen writes it. Content is a string or a list of {"type": "text"|"image"} parts (VLM messages);
# the {% generation %} markers let TRL's assistant_only_loss find the assistant tokens.
CHAT_TEMPLATE = (
    "{%- macro content(c) -%}"
    "{%- if c is string -%}{{- c -}}"
    "{%- else -%}{%- for part in c -%}"
    "{%- if part['type'] == 'image' -%}{{- '<image>' -}}"
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


def save_tiny(path: str | Path, kind: str = "lm", seed: int = 0) -> Path:
    """Write a tiny model + tokenizer/processor directory that loads like a real checkpoint."""
    if kind not in ("lm", "vlm"):
        raise ValueError(f"kind must be 'lm' or 'vlm', got {kind!r}")
    path = Path(path)
    tokenizer = build_tiny_tokenizer()
    if kind == "lm":
        model, processor = build_tiny_causal_lm(tokenizer, seed), tokenizer
    else:
        model, processor = build_tiny_vlm(tokenizer, seed)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
