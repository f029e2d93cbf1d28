"""deltablue: the DeltaBlue incremental constraint solver (Freeman-Benson, Maloney, Borning).

Two classic workloads: a chain of ``size`` equality constraints driven by an edit constraint,
and a projection of ``size`` scale/offset constraints changed from both ends. Every step checks
its own result; the output counts the checks that passed (all must pass).
Input: ``{"size": 400}`` (optional).
"""

from paramlib import int_param

DEFAULT_SIZE = 400


class Strength:
    """A constraint strength; a smaller ``value`` is stronger."""

    def __init__(self, value, name):
        self.value = value
        self.name = name

    def stronger(self, other):
        return self.value < other.value

    def weaker(self, other):
        return self.value > other.value

    def next_weaker(self):
        return STRENGTHS[self.value + 1]


STRENGTHS = [
    Strength(i, name)
    for i, name in enumerate(
        ["required", "strong_preferred", "preferred", "strong_default", "normal", "weak_default", "weakest"]
    )
]
REQUIRED, STRONG_PREFERRED, PREFERRED, STRONG_DEFAULT, NORMAL, WEAK_DEFAULT, WEAKEST = STRENGTHS


def weakest_of(a, b):
    return a if a.weaker(b) else b


class SolverError(Exception):
    pass


class Variable:
    def __init__(self, name, value=0):
        self.name = name
        self.value = value
        self.constraints = []
        self.determined_by = None
        self.walk_strength = WEAKEST
        self.stay = True
        self.mark = 0

    def remove_constraint(self, constraint):
        self.constraints.remove(constraint)
        if self.determined_by is constraint:
            self.determined_by = None


class Constraint:
    def __init__(self, planner, strength):
        self.planner = planner
        self.strength = strength

    def add(self):
        self.add_to_graph()
        self.planner.incremental_add(self)

    def satisfy(self, mark):
        """Pick a method; return the constraint this one overrides, if any."""
        self.choose_method(mark)
        if not self.is_satisfied():
            if self.strength is REQUIRED:
                raise SolverError("could not satisfy a required constraint")
            return None
        self.mark_inputs(mark)
        out = self.output()
        overridden = out.determined_by
        if overridden is not None:
            overridden.mark_unsatisfied()
        out.determined_by = self
        if not self.planner.add_propagate(self, mark):
            raise SolverError("cycle encountered")
        out.mark = mark
        return overridden

    def destroy(self):
        if self.is_satisfied():
            self.planner.incremental_remove(self)
        else:
            self.remove_from_graph()

    def is_input(self):
        return False


class UnaryConstraint(Constraint):
    def __init__(self, planner, variable, strength):
        super().__init__(planner, strength)
        self.variable = variable
        self.satisfied = False
        self.add()

    def add_to_graph(self):
        self.variable.constraints.append(self)
        self.satisfied = False

    def remove_from_graph(self):
        self.variable.remove_constraint(self)
        self.satisfied = False

    def choose_method(self, mark):
        self.satisfied = self.variable.mark != mark and self.strength.stronger(self.variable.walk_strength)

    def is_satisfied(self):
        return self.satisfied

    def mark_inputs(self, mark):
        pass

    def output(self):
        return self.variable

    def recalculate(self):
        self.variable.walk_strength = self.strength
        self.variable.stay = not self.is_input()
        if self.variable.stay:
            self.execute()

    def mark_unsatisfied(self):
        self.satisfied = False

    def inputs_known(self, mark):
        return True

    def execute(self):
        pass


class StayConstraint(UnaryConstraint):
    """Keeps a variable's value where it is."""


class EditConstraint(UnaryConstraint):
    """Marks a variable as changed from outside the solver."""

    def is_input(self):
        return True


NONE, FORWARD, BACKWARD = 0, 1, 2


class BinaryConstraint(Constraint):
    def __init__(self, planner, v1, v2, strength, add=True):
        super().__init__(planner, strength)
        self.v1 = v1
        self.v2 = v2
        self.direction = NONE
        if add:
            self.add()

    def add_to_graph(self):
        self.v1.constraints.append(self)
        self.v2.constraints.append(self)
        self.direction = NONE

    def remove_from_graph(self):
        self.v1.remove_constraint(self)
        self.v2.remove_constraint(self)
        self.direction = NONE

    def choose_method(self, mark):
        v1, v2, strength = self.v1, self.v2, self.strength
        if v1.mark == mark:
            self.direction = FORWARD if v2.mark != mark and strength.stronger(v2.walk_strength) else NONE
            return
        if v2.mark == mark:
            self.direction = BACKWARD if v1.mark != mark and strength.stronger(v1.walk_strength) else NONE
            return
        if v1.walk_strength.weaker(v2.walk_strength):
            self.direction = BACKWARD if strength.stronger(v1.walk_strength) else NONE
        else:
            self.direction = FORWARD if strength.stronger(v2.walk_strength) else BACKWARD

    def is_satisfied(self):
        return self.direction != NONE

    def input(self):
        return self.v1 if self.direction == FORWARD else self.v2

    def output(self):
        return self.v2 if self.direction == FORWARD else self.v1

    def mark_inputs(self, mark):
        self.input().mark = mark

    def recalculate(self):
        source, out = self.input(), self.output()
        out.walk_strength = weakest_of(self.strength, source.walk_strength)
        out.stay = source.stay
        if out.stay:
            self.execute()

    def mark_unsatisfied(self):
        self.direction = NONE

    def inputs_known(self, mark):
        source = self.input()
        return source.mark == mark or source.stay or source.determined_by is None


class EqualityConstraint(BinaryConstraint):
    def execute(self):
        self.output().value = self.input().value


class ScaleConstraint(BinaryConstraint):
    """dest = src * scale + offset, solvable in either direction."""

    def __init__(self, planner, src, scale, offset, dest, strength):
        self.scale = scale
        self.offset = offset
        super().__init__(planner, src, dest, strength)

    def add_to_graph(self):
        super().add_to_graph()
        self.scale.constraints.append(self)
        self.offset.constraints.append(self)

    def remove_from_graph(self):
        super().remove_from_graph()
        self.scale.remove_constraint(self)
        self.offset.remove_constraint(self)

    def mark_inputs(self, mark):
        super().mark_inputs(mark)
        self.scale.mark = self.offset.mark = mark

    def execute(self):
        if self.direction == FORWARD:
            self.v2.value = self.v1.value * self.scale.value + self.offset.value
        else:
            self.v1.value = (self.v2.value - self.offset.value) // self.scale.value

    def recalculate(self):
        source, out = self.input(), self.output()
        out.walk_strength = weakest_of(self.strength, source.walk_strength)
        out.stay = source.stay and self.scale.stay and self.offset.stay
        if out.stay:
            self.execute()


class Plan:
    def __init__(self):
        self.constraints = []

    def execute(self):
        for constraint in self.constraints:
            constraint.execute()


class Planner:
    def __init__(self):
        self.current_mark = 0

    def new_mark(self):
        self.current_mark += 1
        return self.current_mark

    def incremental_add(self, constraint):
        mark = self.new_mark()
        overridden = constraint.satisfy(mark)
        while overridden is not None:
            overridden = overridden.satisfy(mark)

    def incremental_remove(self, constraint):
        out = constraint.output()
        constraint.mark_unsatisfied()
        constraint.remove_from_graph()
        unsatisfied = self.remove_propagate_from(out)
        strength = REQUIRED
        while True:
            for candidate in unsatisfied:
                if candidate.strength is strength:
                    self.incremental_add(candidate)
            strength = strength.next_weaker()
            if strength is WEAKEST:
                break

    def make_plan(self, sources):
        mark = self.new_mark()
        plan = Plan()
        todo = list(sources)
        while todo:
            constraint = todo.pop(0)
            out = constraint.output()
            if out.mark != mark and constraint.inputs_known(mark):
                plan.constraints.append(constraint)
                out.mark = mark
                self.add_constraints_consuming_to(out, todo)
        return plan

    def extract_plan(self, constraints):
        return self.make_plan([c for c in constraints if c.is_input() and c.is_satisfied()])

    def add_propagate(self, constraint, mark):
        todo = [constraint]
        while todo:
            current = todo.pop(0)
            if current.output().mark == mark:
                self.incremental_remove(constraint)
                return False
            current.recalculate()
            self.add_constraints_consuming_to(current.output(), todo)
        return True

    def remove_propagate_from(self, out):
        out.determined_by = None
        out.walk_strength = WEAKEST
        out.stay = True
        unsatisfied = []
        todo = [out]
        while todo:
            variable = todo.pop(0)
            for constraint in variable.constraints:
                if not constraint.is_satisfied():
                    unsatisfied.append(constraint)
            determining = variable.determined_by
            for constraint in variable.constraints:
                if constraint is not determining and constraint.is_satisfied():
                    constraint.recalculate()
                    todo.append(constraint.output())
        return unsatisfied

    def add_constraints_consuming_to(self, variable, todo):
        determining = variable.determined_by
        for constraint in variable.constraints:
            if constraint is not determining and constraint.is_satisfied():
                todo.append(constraint)


def chain_test(n):
    """A chain v0 = v1 = ... = vn; editing v0 must show at vn. Returns the checks passed."""
    planner = Planner()
    variables = [Variable("v%d" % i) for i in range(n + 1)]
    for previous, current in zip(variables, variables[1:]):
        EqualityConstraint(planner, previous, current, REQUIRED)
    first, last = variables[0], variables[-1]
    StayConstraint(planner, last, STRONG_DEFAULT)
    edit = EditConstraint(planner, first, PREFERRED)
    plan = planner.extract_plan([edit])
    checks = 0
    for value in range(100):
        first.value = value
        plan.execute()
        if last.value != value:
            raise SolverError("chain test failed: %r != %r" % (last.value, value))
        checks += 1
    edit.destroy()
    return checks


def change(planner, variable, value):
    edit = EditConstraint(planner, variable, PREFERRED)
    plan = planner.extract_plan([edit])
    for _ in range(10):
        variable.value = value
        plan.execute()
    edit.destroy()


def projection_test(n):
    """dst_i = src_i * scale + offset for n pairs, changed from both sides. Returns checks passed."""
    planner = Planner()
    scale = Variable("scale", 10)
    offset = Variable("offset", 1000)
    destinations = []
    src = dst = None
    for i in range(n):
        src = Variable("src%d" % i, i)
        dst = Variable("dst%d" % i, i)
        destinations.append(dst)
        StayConstraint(planner, src, NORMAL)
        ScaleConstraint(planner, src, scale, offset, dst, REQUIRED)
    checks = 0
    change(planner, src, 17)
    if dst.value != 1170:
        raise SolverError("projection test 1 failed: %r" % dst.value)
    checks += 1
    change(planner, dst, 1050)
    if src.value != 5:
        raise SolverError("projection test 2 failed: %r" % src.value)
    checks += 1
    change(planner, scale, 5)
    for i in range(n - 1):
        if destinations[i].value != i * 5 + 1000:
            raise SolverError("projection test 3 failed at %d" % i)
        checks += 1
    change(planner, offset, 2000)
    for i in range(n - 1):
        if destinations[i].value != i * 5 + 2000:
            raise SolverError("projection test 4 failed at %d" % i)
        checks += 1
    return checks


def main(args):
    try:
        n = int_param(args, "size", DEFAULT_SIZE, 1, 1000000)
    except ValueError as error:
        return {"error": str(error)}
    chain_checks = chain_test(n)
    projection_checks = projection_test(n)
    return {"benchmark": "deltablue", "size": n, "chain_checks": chain_checks, "projection_checks": projection_checks}
