"""The invoker: workload specification, arrival schedules, the open-loop dispatcher, the OpenWhisk
REST client and deploying actions."""
