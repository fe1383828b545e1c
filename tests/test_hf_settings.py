"""The HF policy's `policy.*` settings (device, dtype, pixel budget, status-bar crop, gradient checkpointing,
response length, SFT batch, LoRA): checked where they are parsed, each error naming its key, and passed to
the policy the entry points build (docs/gpu.md's recipe, run here on CPU with the tiny Qwen3-VL)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from experiments import config as C

needs_peft = pytest.mark.skipif(importlib.util.find_spec("peft") is None,
                                reason="peft is not installed (pip install -e '.[lora]')")
HF = ["policy=hf"]


@pytest.mark.parametrize(("overrides", "message"), [
    (["policy.device=gpu"], r"policy.device='gpu': expected auto, cpu, cuda or cuda:N"),
    (["policy.dtype=bf16"], r"policy.dtype='bf16': expected one of auto, float32, bfloat16, float16"),
    (["policy.gradient_checkpointing=yes"], r"policy.gradient_checkpointing='yes': expected one of auto, on"),
    (["policy.min_pixels=-1"], r"policy.min_pixels=-1: expected pixels >= 0"),
    (["policy.min_pixels=5000", "policy.max_pixels=4096"],
     r"policy.min_pixels=5000, policy.max_pixels=4096: expected min_pixels <= max_pixels"),
    (["policy.max_new_tokens=0"], r"policy.max_new_tokens=0: expected an integer >= 1"),
    (["policy.sft_batch_size=0"], r"policy.sft_batch_size=0: expected an integer >= 1"),
    (["policy.lora_r=-1"], r"policy.lora_r=-1: expected an integer >= 0"),
    (["policy.lora_r=4", "policy.lora_alpha=0"], r"policy.lora_alpha=0.0: expected a number > 0"),
    (["policy.lora_r=4", "policy.lora_dropout=1"], r"policy.lora_dropout=1.0: expected a value in \[0, 1\)"),
    (["policy.lora_r=4", "policy.lora_targets=[]"], r"policy.lora_targets=\[\]: expected a list of module"),
])
def test_bad_hf_settings_are_one_line_errors_naming_the_key(overrides, message):
    with pytest.raises(SystemExit, match=message) as e:
        C.parse([*HF, *overrides], C.TrainConfig, "train")
    assert "\n" not in str(e.value)


def test_cuda_without_a_cuda_device_is_an_error_naming_the_key():
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(SystemExit, match=rf"policy.device='cuda:{n}': torch sees {n} CUDA devices here"):
        C.parse([*HF, f"policy.device=cuda:{n}"], C.TrainConfig, "train")


def test_lora_needs_the_hf_policy_and_peft(monkeypatch):
    with pytest.raises(SystemExit, match=r"policy.lora_r=4: LoRA adapts policy=hf models"):
        C.parse(["policy=small", "policy.lora_r=4"], C.TrainConfig, "train")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "peft" else real(name, *a))
    with pytest.raises(SystemExit, match=r"policy.lora_r=4: needs peft, which is not installed: "
                                         r"pip install -e '\.\[lora\]'"):
        C.parse([*HF, "policy.lora_r=4"], C.TrainConfig, "train")


def test_hf_settings_become_the_policy_s_arguments_and_its_cache_key():
    from experiments.common import base_key, hf_settings, load_overrides

    cfg = C.parse([*HF, "policy.device=cpu", "policy.dtype=bfloat16", "policy.max_pixels=1003520",
                   "policy.crop_status_bar=true", "policy.gradient_checkpointing=on", "policy.lora_r=8",
                   "policy.lora_targets=q_proj,v_proj"], C.TrainConfig, "train")
    kw = hf_settings(cfg.policy)
    assert kw == {"device": "cpu", "dtype": "bfloat16", "min_pixels": None, "max_pixels": 1003520,
                  "crop_status_bar": True, "gradient_checkpointing": True, "max_new_tokens": 64,
                  "sft_batch_size": 8, "lora_r": 8, "lora_alpha": 16.0, "lora_dropout": 0.0,
                  "lora_targets": ["q_proj", "v_proj"]}
    auto = hf_settings(C.parse(HF, C.TrainConfig, "train").policy)
    assert auto["device"] == ("cuda" if torch.cuda.is_available() else "cpu") and auto["dtype"] is None
    plain = C.parse(HF, C.TrainConfig, "train")
    pinned = C.parse([*HF, "policy.device=cpu"], C.TrainConfig, "train")
    tasks = ["SystemWifiTurnOn"]
    assert base_key(plain, tasks) == base_key(pinned, tasks)  # where it runs is not what it is
    assert base_key(plain, tasks) != base_key(cfg, tasks)
    # a saved policy keeps its own device unless policy.device is set
    assert load_overrides(plain) == {} and load_overrides(pinned) == {"device": "cpu"}


@needs_peft
@pytest.mark.slow
def test_train_builds_the_hf_policy_the_settings_describe(tmp_path):
    """docs/gpu.md's recipe at the tiny Qwen3-VL's size on CPU: RFT through LoRA with a pixel budget and the
    status bar cropped; the checkpoint holds the adapters and the settings, and the base stays the model's."""
    from experiments.train import main

    out = tmp_path / "rft"
    main(["algo=rft", "policy=hf", "policy.hf_model=tiny-qwen3-vl", "policy.device=cpu",
          "policy.dtype=float32", "policy.max_pixels=2304", "policy.crop_status_bar=true",
          "policy.max_new_tokens=16",
          "policy.lora_r=4", "tasks=SystemWifiTurnOn", "env.screen_scale=0.05", "env.num_envs=2",
          "rft.iterations=1", "rft.instances_per_iter=2", "rft.group_size=2", "eval_n_per_task=1",
          "base.demos_per_task=1", "base.epochs=1", "wandb=disabled", "progress=false", f"out_dir={out}",
          f"cache_dir={tmp_path / 'cache'}"])
    policy_dir = out / "checkpoints" / "it_1" / "policy"
    settings = json.loads((policy_dir / "hf_policy.json").read_text())
    assert settings["lora_r"] == 4 and settings["crop_status_bar"] and settings["max_new_tokens"] == 16
    assert settings["device"] == "cpu" and settings["dtype"] == "float32"
    assert (policy_dir / "adapter" / "adapter_model.safetensors").exists()
    processor = json.loads((policy_dir / "processor_config.json").read_text())
    assert processor["image_processor"]["size"]["longest_edge"] == 2304
