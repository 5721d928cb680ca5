"""The SLURM executor, by concern: states (parsing squeue/scontrol), cluster (the client tools),
script (the sbatch script and task list), submit (submit and follow), status (status, cancel)."""
