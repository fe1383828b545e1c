"""Entry points: train.py (one algorithm), evaluate.py (Pass@1), pretrain.py (the base policy)."""
