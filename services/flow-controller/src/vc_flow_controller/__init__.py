"""Tephra flow controller: JobFlow, JobTemplate and Cron VolcanoJob (flow.volcano.sh, batch.volcano.sh CronJob)."""
