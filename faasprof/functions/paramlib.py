"""paramlib: the parameter reading the Python microbenchmarks share (linked into each folder,
so that every action archive and every native run carries it)."""


def int_param(args, name, default, low, high):
    """``args[name]`` as an integer in [low, high]; missing or null gives ``default``. A whole
    number may come as a float or a string ("100", "1e3"), as CLIs and param files send it.
    Anything else raises ValueError with a message naming the parameter and its range."""
    value = args.get(name)
    if value is None:
        return default
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, (float, str)):
        try:
            as_float = float(value)
        except ValueError:
            as_float = None
        # finite (inf - inf and nan - nan are nan) and whole
        if as_float is not None and as_float - as_float == 0 and as_float == int(as_float):
            digits = isinstance(value, str) and value.strip().lstrip("+-").isdigit()
            number = int(value) if digits else int(as_float)  # "123456789012345678901" stays exact
    if number is None or not low <= number <= high:
        raise ValueError("%s: expected a whole number from %d to %d (got %r)" % (name, low, high, value))
    return number
