"""Run stage: the job plan, one job's execution, and the executors (local, slurm)."""
