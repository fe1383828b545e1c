"""Training algorithms over one trajectory buffer and one policy interface (RFT, GRSD, GRPO, PPO, GiGPO)."""
