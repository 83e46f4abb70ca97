"""`gridproof check` and `simulate`: one deployment's analysis, its restore law and its rendering
(the confirmation on the real vLLM is proofs/real_vllm/confirm.py)."""
