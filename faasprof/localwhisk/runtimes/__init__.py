"""Language launchers run inside sandboxes (``launcher.py`` for Python, ``launcher.js`` for Node.js).

They speak localwhisk's actionloop-like pipe protocol: one JSON request per line on stdin, one JSON
reply per line on fd 3 (``$__LW_FD``), the action's own output on stdout/stderr followed by
OpenWhisk's ``XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX`` sentinel on both after every request.
"""
