"""OpenWhisk, and localwhisk, which is one, in one module per job:

- ``connection``: where the API host, key and namespace come from (flags, the workload's
  ``platform`` block, ``~/.wskprops``, the localwhisk of ``faasprof local start``);
- ``client``: the control-plane REST client (``OpenWhiskClient``) and its typed errors;
- ``records``: a run's activation records, fetched over the REST API and saved into the run;
- ``deploy``: catalogue and researchers' functions packaged as actions;
- ``platform``: ``OpenWhiskPlatform``, the ``faasprof.platforms.base.Platform`` a run uses: requests
  formatted once, responses classified.
"""
