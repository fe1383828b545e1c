"""A Hugging Face policy: a transformers causal LM or vision-language model plus its processor.

The prompt is a chat: [system: SYSTEM, user: render_prompt(x) (+ the screenshot for VLMs)] through the
processor's chat template with the assistant generation prompt; the response is the generated text
(`Reason: ... Action: {json}`). Log-probs are the model's own (temperature 1) over the response tokens
followed by the end-of-turn token, and `act` reports exactly what `log_probs` computes for its text, so
behaviour and training log-probs agree. A value head (one linear layer on the last hidden state at the last
prompt token, zero-initialised, float32) serves PPO; it is saved beside the weights and created fresh when a
checkpoint has none. `fit_sft` trains with TRL's SFTTrainer on prompt/completion data
(loss on the completion only). With `lora_r` > 0 (the `lora` extra: peft) the model trains through LoRA
adapters on the language model's projections only: the base weights stay frozen (in bf16 on GPU) while the
adapters, the value head and their optimizer states are float32. Real runs use a Qwen-VL class checkpoint on
GPU; tests use the offline tiny models of `algos.policies.tiny`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import random
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from algos.policies.base import ActionEval, Policy, PolicyOutput, check_lr_schedule
from algos.prompt import SYSTEM, PolicyInput, render_prompt
from voyager_gym.actions import try_parse_action

SETTINGS_FILE = "hf_policy.json"  # policy settings saved next to the weights
VALUE_HEAD_FILE = "value_head.safetensors"  # the PPO value head, saved next to the weights
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>")  # ChatML, Llama 3, Gemma, Phi
TRUNCATED = "\n...(truncated)"
TOKEN_ALIGNED_KEYS = {"token_type_ids", "mm_token_type_ids"}  # processor outputs with one entry per token
STATUS_BAR_FRACTION = 96 / 2400  # SimDroid's status bar (backends/sim/widgets.py STATUS_H) per height
ADAPTER_DIR = "adapter"  # LoRA adapters (peft's format), saved in this subfolder beside the base weights
# LoRA's default targets: the attention and MLP projections of Qwen / Llama / Mistral-style language models
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_EXTRA = "pip install -e '.[lora]'"  # the extra that installs peft


# model type -> the transformers processor class whose image part `qwen_vl_processor` stands in for
QWEN_VL_PROCESSORS = {"qwen3_vl": "Qwen3VLProcessor", "qwen3_vl_moe": "Qwen3VLProcessor",
                      "qwen2_5_vl": "Qwen2_5_VLProcessor"}
QWEN_VL_TYPES = tuple(QWEN_VL_PROCESSORS)


@functools.cache
def images_processor_class(model_type: str = "qwen3_vl") -> type:
    import transformers

    if model_type not in QWEN_VL_PROCESSORS:
        raise ValueError(f"model type {model_type!r}: expected one of {', '.join(QWEN_VL_TYPES)}")
    base = getattr(transformers, QWEN_VL_PROCESSORS[model_type])

    class QwenVLImagesProcessor(base):
        """A Qwen-VL processor without its video processor, which needs torchvision (absent beside some torch
        builds): screenshots go through the same image processor, vision tokens and chat template."""

        def __init__(self, image_processor: Any = None, tokenizer: Any = None,
                     chat_template: str | None = None, **kwargs: Any):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    return QwenVLImagesProcessor


def qwen_vl_processor(image_processor: Any, tokenizer: Any, chat_template: str | None = None,
                      model_type: str = "qwen3_vl") -> Any:
    """A Qwen-VL processor for images (`QwenVLImagesProcessor`: the processor class of `model_type`, a key of
    QWEN_VL_PROCESSORS) from its image processor and tokenizer."""
    return images_processor_class(model_type)(
        image_processor=image_processor, tokenizer=tokenizer,
        chat_template=chat_template or getattr(tokenizer, "chat_template", None))


def load_pretrained(name: str | Path, dtype: Any = None, device: str = "cpu") -> tuple[Any, Any]:
    """(model, processor) from a local directory or hub id: a VLM class when the config has a vision part. A
    Qwen-VL whose full processor cannot be built here (no torchvision for its video processor) gets
    `qwen_vl_processor` from its image processor and tokenizer."""
    from transformers import (
        AutoConfig,
        AutoImageProcessor,
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        AutoProcessor,
        AutoTokenizer,
    )

    config = AutoConfig.from_pretrained(name)
    is_vlm = getattr(config, "vision_config", None) is not None
    auto = AutoModelForImageTextToText if is_vlm else AutoModelForCausalLM
    if dtype is None:  # full precision on CPU; the checkpoint's own dtype (bf16 for Qwen) on accelerators
        dtype = torch.float32 if str(device) == "cpu" else "auto"
    elif isinstance(dtype, str) and dtype != "auto":
        dtype = torch_dtype(dtype)
    model = auto.from_pretrained(name, dtype=dtype)
    try:
        processor = AutoProcessor.from_pretrained(name)
    except (ValueError, TypeError, AttributeError, ImportError, OSError):
        processor = None
    if is_vlm and getattr(processor, "image_processor", None) is None:
        if config.model_type not in QWEN_VL_TYPES:
            raise ValueError(f"{name}: AutoProcessor built no image processor for this {config.model_type!r} "
                             "vision-language model (is torchvision missing?); expected one of "
                             f"{QWEN_VL_TYPES} or a checkpoint whose processor loads here")
        tokenizer = AutoTokenizer.from_pretrained(name)
        template = Path(name) / "chat_template.jinja"
        chat = template.read_text() if template.is_file() else None
        processor = qwen_vl_processor(AutoImageProcessor.from_pretrained(name), tokenizer, chat,
                                      config.model_type)
    return model, processor


def require_peft() -> Any:
    """The peft module, or an ImportError naming the extra that installs it."""
    try:
        import peft
    except ImportError:
        raise ImportError(f"lora_r > 0 needs peft, which is not installed: {LORA_EXTRA}") from None
    return peft


def lora_target_names(model: Any, targets: Sequence[str]) -> list[str]:
    """Full names of the linear layers of `model`'s language model (its decoder: never a vision tower, whose
    MLPs may share the names, as Qwen2.5-VL's gate/up/down_proj do) whose own name is in `targets`."""
    decoder = model.get_decoder()
    inside = {id(m) for m in decoder.modules()}
    linear = [(n, n.rsplit(".", 1)[-1]) for n, m in model.named_modules()
              if id(m) in inside and isinstance(m, torch.nn.Linear)]
    names = [n for n, leaf in linear if leaf in targets]
    if not names:
        found = ", ".join(sorted({leaf for _, leaf in linear}))
        raise ValueError(f"lora_targets={list(targets)}: no linear layer of {type(decoder).__name__} has one "
                         f"of these names; expected some of: {found}")
    return names


def check_lora(r: int, alpha: float, dropout: float, targets: Sequence[str]) -> None:
    """A ValueError naming the first LoRA setting out of range."""
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise ValueError(f"lora_r={r!r}: expected an integer >= 0 (0: no LoRA, train every weight)")
    if not alpha > 0:
        raise ValueError(f"lora_alpha={alpha!r}: expected a number > 0")
    if not 0 <= dropout < 1:
        raise ValueError(f"lora_dropout={dropout!r}: expected a value in [0, 1)")
    if isinstance(targets, str) or not targets or not all(isinstance(t, str) and t for t in targets):
        raise ValueError(f"lora_targets={targets!r}: expected a list of module names such as "
                         f"{list(LORA_TARGETS)}")


def add_lora(model: Any, r: int, alpha: float, dropout: float, targets: Sequence[str], seed: int) -> Any:
    """`model` wrapped by peft with LoRA adapters of rank `r` on `lora_target_names(model, targets)`; only the
    adapters require gradients. They start as the identity (B = 0; A drawn from `seed`, without touching the
    global RNG), and are float32 even on a bf16/fp16 base (peft's autocast_adapter_dtype)."""
    peft = require_peft()
    config = peft.LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, bias="none",
                             target_modules=lora_target_names(model, targets))
    device = next(model.parameters()).device
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        return peft.get_peft_model(model, config, autocast_adapter_dtype=True)


def base_state_dict(peft_model: Any) -> dict[str, torch.Tensor]:
    """The base model's weights under their own names (peft's `base_layer` level dropped), adapters left
    out: what `from_pretrained` of the bare model class reads."""
    out = {}
    for key, value in peft_model.get_base_model().state_dict().items():
        parts = key.split(".")
        if not any(p.startswith("lora_") for p in parts):
            out[".".join(p for p in parts if p != "base_layer")] = value
    return out


def torch_dtype(name: str | torch.dtype) -> torch.dtype:
    """'bfloat16' / 'bf16' / 'float16' / 'float32' (or a torch.dtype) as a torch.dtype."""
    if isinstance(name, torch.dtype):
        return name
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
               "float": "float32"}
    dt = getattr(torch, aliases.get(name, name), None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"dtype={name!r}: expected bfloat16, float16 or float32")
    return dt


def set_pixel_budget(image_processor: Any, min_pixels: int | None, max_pixels: int | None) -> None:
    """Resize screenshots to between `min_pixels` and `max_pixels` (None: keep the processor's) in a Qwen-VL
    image processor, which keeps the aspect ratio and makes both sides multiples of patch x merge size."""
    size = getattr(image_processor, "size", None)
    if size is None or not hasattr(image_processor, "merge_size"):
        raise ValueError(f"min_pixels/max_pixels need a Qwen-VL image processor (dynamic resolution); "
                         f"got {type(image_processor).__name__}")
    lo = size["shortest_edge"] if min_pixels is None else min_pixels
    hi = size["longest_edge"] if max_pixels is None else max_pixels
    if not 0 < lo <= hi:
        raise ValueError(f"min_pixels={lo}, max_pixels={hi}: expected 0 < min_pixels <= max_pixels")
    if dataclasses.is_dataclass(size):
        image_processor.size = dataclasses.replace(size, shortest_edge=lo, longest_edge=hi)
    else:
        image_processor.size = {**size, "shortest_edge": lo, "longest_edge": hi}
    for key, value in (("min_pixels", lo), ("max_pixels", hi)):  # older processors read these attributes
        if getattr(image_processor, key, None) is not None:
            setattr(image_processor, key, value)


def pixel_budget(image_processor: Any) -> tuple[int, int] | None:
    """(min_pixels, max_pixels) of a Qwen-VL image processor, None for other processors."""
    size = getattr(image_processor, "size", None)
    if size is None or not hasattr(image_processor, "merge_size"):
        return None
    return int(size["shortest_edge"]), int(size["longest_edge"])


WEIGHT_COLUMN = "sample_weight"  # fit_sft's per-sample loss weights, through TRL's dataset and collator


def check_weights(weights: list[float] | None, n: int) -> None:
    """A ValueError unless `weights` is None or n finite, non-negative numbers, not all zero."""
    if weights is None:
        return
    if len(weights) != n:
        raise ValueError(f"fit_sft got {len(weights)} weights for {n} samples; expected one per sample")
    for i, w in enumerate(weights):
        if not isinstance(w, (int, float, np.integer, np.floating)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"fit_sft weights[{i}]={w!r}: expected a finite number >= 0")
    if not any(w > 0 for w in weights):
        raise ValueError(f"fit_sft weights are all 0 ({n} samples): expected at least one positive weight")


@functools.cache
def sft_trainer_class(weighted: bool) -> type:
    """TRL's SFTTrainer, or (weighted) one whose loss weighs each sample by its WEIGHT_COLUMN entry."""
    from trl import SFTTrainer

    if not weighted:
        return SFTTrainer

    class WeightedSFTTrainer(SFTTrainer):
        """Loss: sum over samples of w * (summed completion-token NLL) / sum of w * (completion tokens)."""

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            collate = self.data_collator

            def with_weights(examples: list[dict[str, Any]]) -> dict[str, Any]:
                w = torch.tensor([float(e[WEIGHT_COLUMN]) for e in examples])
                batch = collate([{k: v for k, v in e.items() if k != WEIGHT_COLUMN} for e in examples])
                batch[WEIGHT_COLUMN] = w
                return batch

            self.data_collator = with_weights

        def _set_signature_columns_if_needed(self) -> None:
            super()._set_signature_columns_if_needed()
            if WEIGHT_COLUMN not in self._signature_columns:
                self._signature_columns = [*self._signature_columns, WEIGHT_COLUMN]

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            w, labels = inputs.pop(WEIGHT_COLUMN), inputs.pop("labels")
            outputs = model(**inputs, use_cache=False)
            logits, target = outputs.logits[:, :-1].float(), labels[:, 1:]
            mask = (target != -100).float()
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target.clamp(min=0),
                                                    reduction="none")
            w = w.to(nll.device, torch.float32).unsqueeze(1)
            total = (w * mask).sum()
            loss = (w * mask * nll).sum() / total.clamp(min=torch.finfo(torch.float32).tiny)
            return (loss, outputs) if return_outputs else loss

    return WeightedSFTTrainer


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """Restore Python, NumPy and torch global RNG states afterwards (the HF Trainer reseeds them all)."""
    py, np_state, cpu = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """Hide the `datasets` progress bars TRL's dataset preparation prints, then restore the setting."""
    from datasets.utils import logging as ds_logging

    enabled = ds_logging.is_progress_bar_enabled()
    ds_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            ds_logging.enable_progress_bar()


class HFPolicy(Policy):
    """A transformers causal LM or VLM as a policy.

    Args:
        model: a local path or hub id, or a loaded `PreTrainedModel` (then `processor` is required).
        processor: the model's tokenizer (text models) or processor (VLMs).
        max_new_tokens: longest response `act` generates.
        temperature: sampling temperature of `act` (log-probs are always the model's, at temperature 1).
        device: where the model runs ('cpu', 'cuda', 'cuda:1', ...).
        images: 'auto' (screenshots when the model is a VLM), True or False.
        seed: drives sampling; call k of `act` uses seed (seed, k), so a run replays exactly.
        max_prompt_tokens: longer prompts lose the tail of their user text (image tokens not counted).
        dtype: model dtype when loading from a path (default float32 on CPU, the checkpoint's on GPU).
        sft_batch_size: per-device batch size of `fit_sft`.
        sft_args: extra `trl.SFTConfig` fields for `fit_sft` (lr_scheduler_type, optim, ...).
        min_pixels, max_pixels: a Qwen-VL processor's pixel budget for a screenshot (None: the processor's
            own); it keeps the aspect ratio and makes both sides multiples of patch x merge size (32 pixels
            for Qwen3-VL, each 32x32 block one image token). Set on the processor, so `fit_sft` (TRL) and
            `act` see the same resolution, and saved with it.
        crop_status_bar: drop the screenshot's top STATUS_BAR_FRACTION (SimDroid's status bar, 96 of 2400
            rows: the clock and icons, noise to the model) before the processor sees it.
        gradient_checkpointing: recompute activations in `fit_sft`'s backward pass (None: on except on CPU).
        lora_r: LoRA rank (0: no LoRA, every weight trains). > 0 wraps the model with peft (the `lora` extra):
            adapters on the language model's `lora_targets` layers train (with the value head), the base
            weights stay frozen; the adapters are float32 on a bf16/fp16 base, so updates do not round away.
        lora_alpha, lora_dropout: LoRA's scale numerator (the update is B A x * alpha / r) and dropout.
        lora_targets: names of the language model's linear layers that get adapters (default: the attention
            and MLP projections, LORA_TARGETS); a vision tower's layers never do.
    """

    name = "hf"
    trainable = True
    has_value = True

    def __init__(self, model: Any, processor: Any = None, max_new_tokens: int = 64, temperature: float = 1.0,
                 device: str = "cpu", images: bool | str = "auto", seed: int = 0,
                 max_prompt_tokens: int | None = 4096, dtype: Any = None, sft_batch_size: int = 8,
                 sft_args: dict[str, Any] | None = None, min_pixels: int | None = None,
                 max_pixels: int | None = None, crop_status_bar: bool = False,
                 gradient_checkpointing: bool | None = None, lora_r: int = 0, lora_alpha: float = 16.0,
                 lora_dropout: float = 0.0, lora_targets: Sequence[str] = LORA_TARGETS):
        if str(device).startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but torch sees no CUDA device here; pass device='cpu'")
        check_lora(lora_r, lora_alpha, lora_dropout, lora_targets)
        if lora_r:
            require_peft()  # before loading weights: the missing extra is the error, not a late one
        if isinstance(model, (str, Path)):
            model, loaded = load_pretrained(model, dtype=dtype, device=device)
            processor = processor if processor is not None else loaded
        elif processor is None:
            raise ValueError(f"HFPolicy got a {type(model).__name__} object but processor=None; pass its "
                             "tokenizer/processor, or give a path so both load with from_pretrained")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}; use act(greedy=True) for argmax")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.lora_r, self.lora_alpha, self.lora_dropout = lora_r, float(lora_alpha), float(lora_dropout)
        self.lora_targets = list(lora_targets)
        self.dtype = model.get_input_embeddings().weight.dtype  # the base weights' (adapters: float32)
        if lora_r:
            model = add_lora(model, lora_r, self.lora_alpha, self.lora_dropout, self.lora_targets, seed)
        self.model = model.to(device).eval()
        # what trains: every weight, or the adapters alone (the value head is added below)
        self._trainable = [p for n, p in self.model.named_parameters() if not lora_r or "lora_" in n]
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.device = torch.device(device)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self.sft_batch_size = sft_batch_size
        self.sft_args = dict(sft_args or {})
        self.is_vlm = (getattr(model.config, "vision_config", None) is not None
                       or getattr(processor, "image_processor", None) is not None)
        if images not in ("auto", True, False):
            raise ValueError(f"images must be 'auto', True or False, got {images!r}")
        if images is True and not self.is_vlm:
            raise ValueError(f"images=True but {type(model).__name__} is not a vision-language model")
        self.use_images = self.is_vlm if images == "auto" else bool(images)
        if min_pixels is not None or max_pixels is not None:
            set_pixel_budget(getattr(processor, "image_processor", None), min_pixels, max_pixels)
        self.crop_status_bar = bool(crop_status_bar)
        self.gradient_checkpointing = gradient_checkpointing
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        vocab = self.tokenizer.get_vocab()
        self.eot = next((t for t in END_OF_TURN_TOKENS if t in vocab), self.tokenizer.eos_token)
        if self.eot is None:
            raise ValueError(f"tokenizer {type(self.tokenizer).__name__} has no end-of-turn or eos token")
        self.eot_id = self.tokenizer.convert_tokens_to_ids(self.eot)
        extra = self.model.generation_config.eos_token_id
        extra = [] if extra is None else [extra] if isinstance(extra, int) else list(extra)
        stops = [self.eot_id, self.tokenizer.eos_token_id, *extra]
        self.stop_ids = [i for i in dict.fromkeys(stops) if i is not None]
        self._calls = 0
        hidden = model.config.get_text_config().hidden_size
        self.value_head = torch.nn.Linear(hidden, 1, device=self.device, dtype=torch.float32)
        torch.nn.init.zeros_(self.value_head.weight)  # V = 0 until trained; no RNG drawn
        torch.nn.init.zeros_(self.value_head.bias)

    @property
    def uses_pixels(self) -> bool:
        return bool(self.use_images)

    @classmethod
    def from_pretrained(cls, path_or_id: str | Path, **kwargs: Any) -> HFPolicy:
        """Load model + processor from a directory or hub id (the same as `HFPolicy(model=path_or_id)`)."""
        return cls(model=path_or_id, **kwargs)

    # -- prompts ------------------------------------------------------------------------------------------
    def messages(self, x: PolicyInput, user_text: str | None = None) -> list[dict[str, Any]]:
        """The chat for one step: system text, then the rendered prompt (after the screenshot for VLMs)."""
        user = render_prompt(x) if user_text is None else user_text
        if not self.use_images:
            return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        return [{"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": user}]}]

    def _template(self, x: PolicyInput, user_text: str | None = None) -> str:
        return self.processor.apply_chat_template(self.messages(x, user_text), tokenize=False,
                                                  add_generation_prompt=True)

    def _n_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_text(self, x: PolicyInput) -> str:
        """The chat-templated prompt, ending with the assistant generation prompt (max_prompt_tokens)."""
        text = self._template(x)
        if self.max_prompt_tokens is None:
            return text
        excess = self._n_tokens(text) - self.max_prompt_tokens
        if excess <= 0:
            return text
        ids = self.tokenizer(render_prompt(x), add_special_tokens=False)["input_ids"]
        keep = max(0, len(ids) - excess - self._n_tokens(TRUNCATED) - 1)
        return self._template(x, self.tokenizer.decode(ids[:keep]) + TRUNCATED)

    def image(self, x: PolicyInput) -> Image.Image:
        """The screenshot of a step as a PIL image (VLM input), its status bar cut with `crop_status_bar`. One
        image per turn: the history is text (the prompt's previous actions), no earlier screenshots."""
        if x.pixels is None:
            raise ValueError("HFPolicy reads screenshots but PolicyInput.pixels is None; create the env with "
                             "observation_mode='full' or build the policy with images=False")
        pixels = np.asarray(x.pixels, dtype=np.uint8)
        if self.crop_status_bar:
            pixels = pixels[round(pixels.shape[0] * STATUS_BAR_FRACTION):]
        return Image.fromarray(pixels).convert("RGB")

    def encode_prompts(self, batch: list[PolicyInput]) -> dict[str, torch.Tensor]:
        """Left-padded prompt tensors (input_ids, attention_mask, and pixel inputs for VLMs) on the device."""
        texts = [self.prompt_text(x) for x in batch]
        kwargs = dict(padding=True, padding_side="left", add_special_tokens=False, return_tensors="pt")
        if self.use_images:
            enc = self.processor(text=texts, images=[self.image(x) for x in batch], **kwargs)
        else:
            enc = self.tokenizer(texts, **kwargs)
        return {k: v.to(self.device) for k, v in enc.items() if isinstance(v, torch.Tensor)}

    # -- scoring ------------------------------------------------------------------------------------------
    def _score(self, enc: dict[str, torch.Tensor], responses: list[str]) -> torch.Tensor:
        """Sum of log p(token) over each response + end-of-turn, given left-padded prompts `enc`."""
        return self._evaluate(enc, responses).logprob

    def _evaluate(self, enc: dict[str, torch.Tensor], responses: list[str], values: bool = False,
                  entropy: bool = False) -> ActionEval:
        """One forward pass over prompt + response: summed response log-probs, the value at the last prompt
        token (`enc` is left-padded, so that is its last column) and the summed per-token entropies."""
        resp = self.tokenizer([r + self.eot for r in responses], padding=True, padding_side="right",
                              add_special_tokens=False, return_tensors="pt").to(self.device)
        resp_ids, resp_mask = resp["input_ids"], resp["attention_mask"]
        inputs = dict(enc)
        for key in TOKEN_ALIGNED_KEYS & enc.keys():  # per-token extras: response tokens are plain text (0)
            inputs[key] = torch.cat([enc[key], torch.zeros_like(resp_ids)], dim=1)
        inputs["input_ids"] = torch.cat([enc["input_ids"], resp_ids], dim=1)
        inputs["attention_mask"] = torch.cat([enc["attention_mask"], resp_mask], dim=1)
        out = self.model(**inputs, use_cache=False, logits_to_keep=resp_ids.shape[1] + 1,
                         output_hidden_states=values)
        logits = out.logits[:, :-1].float()
        lse = logits.logsumexp(-1)
        token_lp = logits.gather(-1, resp_ids.unsqueeze(-1)).squeeze(-1) - lse
        ev = ActionEval((token_lp * resp_mask).sum(-1))
        if values:
            last_prompt = out.hidden_states[-1][:, enc["input_ids"].shape[1] - 1]
            ev.value = self.value_head(last_prompt.float()).squeeze(-1)
        if entropy:  # H = logsumexp(z) - sum_v p_v z_v per token, summed along the response's own path
            token_h = lse - (logits.softmax(-1) * logits).sum(-1)
            ev.entropy = (token_h * resp_mask).sum(-1)
        return ev

    def log_probs(self, batch: list[PolicyInput], responses: list[str]) -> torch.Tensor:
        """Differentiable [B] sums of response-token log-probs (the response followed by end-of-turn)."""
        if len(batch) != len(responses):
            raise ValueError(f"log_probs got {len(batch)} inputs but {len(responses)} responses")
        if not batch:
            return torch.zeros(0, device=self.device)
        return self._score(self.encode_prompts(batch), list(responses))

    def evaluate_actions(self, batch: list[PolicyInput], responses: list[str], values: bool = False,
                         entropy: bool = False) -> ActionEval:
        """Log-probs (as `log_probs`), values and per-response entropies (the sum of each response token's
        full-vocabulary entropy, temperature 1) [B], from one forward pass."""
        if len(batch) != len(responses):
            raise ValueError(f"evaluate_actions got {len(batch)} inputs but {len(responses)} responses")
        if not batch:
            empty = torch.zeros(0, device=self.device)
            return ActionEval(empty, empty if values else None, empty if entropy else None)
        return self._evaluate(self.encode_prompts(batch), list(responses), values, entropy)

    def values(self, batch: list[PolicyInput]) -> torch.Tensor:
        """Value estimates [B] (differentiable): the value head on the last prompt token's hidden state."""
        return self.value_from_features(self._last_prompt_states(batch))

    @torch.no_grad()
    def value_features(self, batch: list[PolicyInput]) -> torch.Tensor:
        """The last prompt token's final hidden states [B, hidden] (no gradients)."""
        return self._last_prompt_states(batch)

    def _last_prompt_states(self, batch: list[PolicyInput]) -> torch.Tensor:
        if not batch:
            return torch.zeros(0, self.value_head.in_features, device=self.device)
        out = self.model(**self.encode_prompts(batch), use_cache=False, logits_to_keep=1,
                         output_hidden_states=True)
        return out.hidden_states[-1][:, -1].float()

    def value_head_parameters(self) -> list[torch.nn.Parameter]:
        return list(self.value_head.parameters())

    def value_from_features(self, feats: torch.Tensor) -> torch.Tensor:
        return self.value_head(feats).squeeze(-1)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The model's weights (with LoRA: its adapters' only) and the value head's."""
        return [*self._trainable, *self.value_head.parameters()]

    def base_model(self) -> Any:
        """The transformers model (under LoRA: the one peft wraps, adapters injected)."""
        return self.model.get_base_model() if self.lora_r else self.model

    # -- acting -------------------------------------------------------------------------------------------
    def _decode(self, ids: torch.Tensor) -> str:
        ids = ids.tolist()
        stops = set(self.stop_ids)
        end = next((i for i, t in enumerate(ids) if t in stops), len(ids))
        return self.tokenizer.decode(ids[:end], skip_special_tokens=True)

    def reseed(self, seed: int) -> None:
        """Restart the per-call sampling seeds (rollouts reseed per iteration, so resumes repeat exactly)."""
        self.seed, self._calls = seed, 0

    def act(self, batch: list[PolicyInput], greedy: bool = False) -> list[PolicyOutput]:
        """Batched generation; unparsable text gives action None (an invalid action), never an exception."""
        if not batch:
            return []
        enc = self.encode_prompts(batch)
        gen = dict(max_new_tokens=self.max_new_tokens, eos_token_id=self.stop_ids,
                   pad_token_id=self.tokenizer.pad_token_id, num_beams=1)
        if greedy:
            gen.update(do_sample=False)
        else:  # sample the model's own distribution: no top-k/top-p/penalty from the checkpoint's config
            gen.update(do_sample=True, temperature=self.temperature, top_k=0, top_p=1.0, min_p=None,
                       repetition_penalty=1.0)
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        call_seed = (self.seed * 1_000_003 + self._calls) % 2**63
        self._calls += 1
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            torch.manual_seed(call_seed)
            out = self.model.generate(**enc, **gen)
            texts = [self._decode(row) for row in out[:, enc["input_ids"].shape[1]:]]
            logprobs = self._score(enc, texts).tolist()
        outputs = []
        for text, lp in zip(texts, logprobs, strict=True):
            action, _ = try_parse_action(text)
            outputs.append(PolicyOutput(text=text, action=action, logprob=float(lp)))
        return outputs

    # -- text generation ----------------------------------------------------------------------------------
    def generate_text(self, prompts: list[str], system: str = "",
                      max_new_tokens: int | None = None) -> list[str]:
        """Greedy text-only chat completions, one per user text in `prompts` (after `system` when given), no
        screenshot: what a policy writes about its own trajectories (algos/grsd_reflect.py's reflections and
        guidance). `max_new_tokens` defaults to the policy's."""
        if not prompts:
            return []
        n_new = self.max_new_tokens if max_new_tokens is None else max_new_tokens
        if n_new < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {n_new}")

        def part(text: str) -> Any:
            return [{"type": "text", "text": text}] if self.use_images else text

        texts = [self.processor.apply_chat_template(
            [*([{"role": "system", "content": part(system)}] if system else []),
             {"role": "user", "content": part(p)}], tokenize=False, add_generation_prompt=True)
            for p in prompts]
        enc = self.tokenizer(texts, padding=True, padding_side="left", add_special_tokens=False,
                             return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=n_new, do_sample=False, num_beams=1,
                                      eos_token_id=self.stop_ids, pad_token_id=self.tokenizer.pad_token_id)
        return [self._decode(row) for row in out[:, enc["input_ids"].shape[1]:]]

    # -- training -----------------------------------------------------------------------------------------
    def sft_dataset(self, samples: list[tuple[PolicyInput, str]], weights: list[float] | None = None) -> Any:
        """TRL prompt/completion `datasets.Dataset` (+ an "images" column for VLMs, a "sample_weight" one with
        `weights`)."""
        from datasets import Dataset

        rows: dict[str, list[Any]] = {"prompt": [self.prompt_text(x) for x, _ in samples],
                                      "completion": [r + self.eot for _, r in samples]}
        if self.use_images:
            rows["images"] = [[self.image(x)] for x, _ in samples]
        if weights is not None:
            rows[WEIGHT_COLUMN] = [float(w) for w in weights]
        return Dataset.from_dict(rows)

    def fit_sft(self, samples: list[tuple[PolicyInput, str]], epochs: int = 1, lr: float | None = None,
                seed: int = 0, lr_schedule: str | None = None,
                weights: list[float] | None = None) -> dict[str, float]:
        """Fine-tune with TRL's SFTTrainer, loss on the completion (response + end-of-turn) only;
        `lr_schedule` None keeps TRL's default (linear decay).

        `weights[i]` multiplies sample i's token losses: a batch's loss is
        sum_i w_i * (sum of i's token NLLs) / sum_i w_i * (i's token count), so weight k is exactly k
        copies of the sample in the same batch (and weight 1 everywhere is TRL's own token-mean loss). Across
        batches it is not repetition: copies could land in other batches and add optimizer steps."""
        from transformers import PrinterCallback
        from trl import SFTConfig

        if not samples:
            raise ValueError("fit_sft got no samples; expected a list of (PolicyInput, response) pairs")
        check_weights(weights, len(samples))
        on_cpu = self.device.type == "cpu"
        checkpointing = (not on_cpu) if self.gradient_checkpointing is None else self.gradient_checkpointing
        cfg = dict(num_train_epochs=epochs, learning_rate=2e-5 if lr is None else lr, seed=seed,
                   data_seed=seed, per_device_train_batch_size=self.sft_batch_size, use_cpu=on_cpu,
                   bf16=False, report_to=[], save_strategy="no", logging_steps=1, completion_only_loss=True,
                   max_length=None, disable_tqdm=True)
        # transformers 5.2x's TrainingArguments names it activation_checkpointing, earlier ones
        # gradient_checkpointing
        names = {f.name for f in dataclasses.fields(SFTConfig)}
        key = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
        cfg[key] = checkpointing
        if check_lr_schedule(lr_schedule) is not None:
            cfg["lr_scheduler_type"] = lr_schedule
        if self.tokenizer.eos_token != self.eot:  # else TRL appends eos after our end-of-turn in text data
            cfg["eos_token"] = self.eot
        cfg.update(self.sft_args)
        with tempfile.TemporaryDirectory() as tmp, preserved_rng(), quiet_datasets():
            dataset = self.sft_dataset(samples, weights)
            args = SFTConfig(output_dir=tmp, **cfg)
            trainer = sft_trainer_class(weights is not None)(
                model=self.model, args=args, train_dataset=dataset,
                processing_class=self.processor if self.use_images else self.tokenizer,
                optimizer_cls_and_kwargs=self._master_weights(args))
            trainer.remove_callback(PrinterCallback)
            result = trainer.train()
        self.model.eval()
        prefix = "activation" if hasattr(self.model, "is_activation_checkpointing") else "gradient"
        if getattr(self.model, f"is_{prefix}_checkpointing", False):
            getattr(self.model, f"{prefix}_checkpointing_disable")()
        self.model.config.use_cache = True
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        return {"loss": float(losses[-1]), "loss_first": float(losses[0]),
                "loss_mean": float(result.training_loss), "steps": float(trainer.state.global_step),
                "samples": float(len(samples))}

    def _master_weights(self, args: Any) -> tuple[type, dict[str, Any]] | None:
        """fit_sft's optimizer when bf16/fp16 weights train (no LoRA): AdamW with float32 master weights and
        moments (algos.optim; TRL's AdamW on bf16 weights would round small updates away), with the
        Trainer's own settings and weight-decay groups. None (TRL's optimizer) for float32 weights, LoRA's
        float32 adapters, or an optimizer chosen in sft_args."""
        from algos.optim import MasterWeightAdamW, has_half

        if "optim" in self.sft_args or not has_half(self._trainable):
            return None
        return MasterWeightAdamW, {"lr": args.learning_rate, "betas": (args.adam_beta1, args.adam_beta2),
                                   "eps": args.adam_epsilon}

    # -- persistence --------------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What `load` rebuilds the policy with (the pixel budget lives in the saved processor)."""
        return {"max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
                "images": self.use_images, "seed": self.seed, "max_prompt_tokens": self.max_prompt_tokens,
                "crop_status_bar": self.crop_status_bar,
                "gradient_checkpointing": self.gradient_checkpointing,
                "sft_batch_size": self.sft_batch_size, "device": str(self.device),
                "dtype": str(self.dtype).removeprefix("torch."), "lora_r": self.lora_r,
                "lora_alpha": self.lora_alpha, "lora_dropout": self.lora_dropout,
                "lora_targets": self.lora_targets}

    def save(self, path: str | Path) -> None:
        """Weights (safetensors), processor/tokenizer and policy settings, loadable by `HFPolicy.load`. Under
        LoRA: the base weights as the bare model's checkpoint (loadable without peft) and the adapters in
        ADAPTER_DIR (peft's format)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self.lora_r:
            self.base_model().save_pretrained(path, state_dict=base_state_dict(self.model))
            self.model.save_pretrained(path / ADAPTER_DIR, save_embedding_layers=False)
        else:
            self.model.save_pretrained(path)
        self.processor.save_pretrained(path)
        (path / SETTINGS_FILE).write_text(json.dumps(self.settings(), indent=1))
        from safetensors.torch import save_file

        save_file({k: v.detach().cpu().contiguous() for k, v in self.value_head.state_dict().items()},
                  str(path / VALUE_HEAD_FILE))

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> HFPolicy:
        """A policy saved by `save` (its settings are defaults; kwargs override them). A checkpoint without a
        value head (an SFT or RFT one) gets a fresh zero-initialised head. A LoRA checkpoint's adapters are
        restored (its LoRA settings cannot be overridden)."""
        settings_file = Path(path) / SETTINGS_FILE
        settings = json.loads(settings_file.read_text()) if settings_file.exists() else {}
        adapter = Path(path) / ADAPTER_DIR / "adapter_model.safetensors"
        if adapter.exists():
            changed = [f"{k}={kwargs[k]!r}" for k in ("lora_r", "lora_alpha", "lora_dropout", "lora_targets")
                       if k in kwargs and kwargs[k] != settings.get(k)]
            if changed:
                raise ValueError(f"{path} holds LoRA adapters of rank {settings.get('lora_r')}; "
                                 f"{', '.join(changed)} would not fit them (load without LoRA overrides)")
        policy = cls(model=path, **{**settings, **kwargs})
        if adapter.exists():
            from safetensors.torch import load_file

            peft = require_peft()
            result = peft.set_peft_model_state_dict(policy.model, load_file(str(adapter), device="cpu"))
            if result.unexpected_keys:
                raise ValueError(f"{adapter}: adapter weights {result.unexpected_keys[:3]} fit no layer of "
                                 "the model")
        head = Path(path) / VALUE_HEAD_FILE
        if head.exists():
            from safetensors.torch import load_file

            policy.value_head.load_state_dict(load_file(str(head), device=str(policy.device)))
        return policy
