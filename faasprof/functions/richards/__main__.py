"""richards: Martin Richards' operating-system simulation (an idle task, a worker, two packet
handlers and two devices exchanging packets under a priority scheduler).

``size`` is the idle task's count; with 10000 the simulation must queue 23246 packets and hold
tasks 9297 times (the figures the benchmark has always been checked against).
Input: ``{"size": 10000}`` (optional).
"""

from paramlib import int_param

DEFAULT_SIZE = 10000

ID_IDLE, ID_WORKER, ID_HANDLER_A, ID_HANDLER_B, ID_DEVICE_A, ID_DEVICE_B = range(6)
KIND_DEVICE, KIND_WORK = 0, 1
DATA_SIZE = 4

RUNNING, RUNNABLE, SUSPENDED, SUSPENDED_RUNNABLE, HELD = 0, 1, 2, 3, 4


class Packet:
    def __init__(self, link, task_id, kind):
        self.link = link
        self.id = task_id
        self.kind = kind
        self.a1 = 0
        self.a2 = [0] * DATA_SIZE

    def append_to(self, queue):
        """Put this packet at the end of ``queue``; returns the queue's head."""
        self.link = None
        if queue is None:
            return self
        tail = queue
        while tail.link is not None:
            tail = tail.link
        tail.link = self
        return queue


class TaskControlBlock:
    def __init__(self, link, task_id, priority, queue, task):
        self.link = link
        self.id = task_id
        self.priority = priority
        self.queue = queue
        self.task = task
        self.state = SUSPENDED if queue is None else SUSPENDED_RUNNABLE

    def held_or_suspended(self):
        return (self.state & HELD) != 0 or self.state == SUSPENDED

    def run(self):
        if self.state == SUSPENDED_RUNNABLE:
            packet = self.queue
            self.queue = packet.link
            self.state = RUNNING if self.queue is None else RUNNABLE
        else:
            packet = None
        return self.task.run(packet)

    def add_packet(self, current, packet):
        """Queue ``packet`` here; returns the block that should run next."""
        if self.queue is None:
            self.queue = packet
            self.state |= RUNNABLE
            if self.priority > current.priority:
                return self
        else:
            self.queue = packet.append_to(self.queue)
        return current


class Scheduler:
    def __init__(self):
        self.queue_count = 0
        self.hold_count = 0
        self.blocks = [None] * 6
        self.list = None
        self.current = None
        self.current_id = None

    def add_task(self, task_id, priority, queue, task):
        self.current = TaskControlBlock(self.list, task_id, priority, queue, task)
        self.list = self.current
        self.blocks[task_id] = self.current

    def schedule(self):
        self.current = self.list
        while self.current is not None:
            if self.current.held_or_suspended():
                self.current = self.current.link
            else:
                self.current_id = self.current.id
                self.current = self.current.run()

    def release(self, task_id):
        block = self.blocks[task_id]
        if block is None:
            return block
        block.state &= ~HELD
        return block if block.priority > self.current.priority else self.current

    def hold_current(self):
        self.hold_count += 1
        self.current.state |= HELD
        return self.current.link

    def suspend_current(self):
        self.current.state |= SUSPENDED
        return self.current

    def queue(self, packet):
        block = self.blocks[packet.id]
        if block is None:
            return block
        self.queue_count += 1
        packet.link = None
        packet.id = self.current_id
        return block.add_packet(self.current, packet)


class IdleTask:
    def __init__(self, scheduler, seed, count):
        self.scheduler = scheduler
        self.v1 = seed
        self.count = count

    def run(self, packet):
        self.count -= 1
        if self.count == 0:
            return self.scheduler.hold_current()
        if self.v1 & 1 == 0:
            self.v1 >>= 1
            return self.scheduler.release(ID_DEVICE_A)
        self.v1 = (self.v1 >> 1) ^ 0xD008
        return self.scheduler.release(ID_DEVICE_B)


class DeviceTask:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.pending = None

    def run(self, packet):
        if packet is None:
            if self.pending is None:
                return self.scheduler.suspend_current()
            packet, self.pending = self.pending, None
            return self.scheduler.queue(packet)
        self.pending = packet
        return self.scheduler.hold_current()


class WorkerTask:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.destination = ID_HANDLER_A
        self.counter = 0

    def run(self, packet):
        if packet is None:
            return self.scheduler.suspend_current()
        self.destination = ID_HANDLER_B if self.destination == ID_HANDLER_A else ID_HANDLER_A
        packet.id = self.destination
        packet.a1 = 0
        for i in range(DATA_SIZE):
            self.counter += 1
            if self.counter > 26:
                self.counter = 1
            packet.a2[i] = self.counter
        return self.scheduler.queue(packet)


class HandlerTask:
    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.work = None
        self.devices = None

    def run(self, packet):
        if packet is not None:
            if packet.kind == KIND_WORK:
                self.work = packet.append_to(self.work)
            else:
                self.devices = packet.append_to(self.devices)
        if self.work is not None:
            index = self.work.a1
            if index < DATA_SIZE:
                if self.devices is not None:
                    device = self.devices
                    self.devices = device.link
                    device.a1 = self.work.a2[index]
                    self.work.a1 = index + 1
                    return self.scheduler.queue(device)
            else:
                work = self.work
                self.work = work.link
                return self.scheduler.queue(work)
        return self.scheduler.suspend_current()


def run_richards(count):
    scheduler = Scheduler()
    scheduler.add_task(ID_IDLE, 0, None, IdleTask(scheduler, 1, count))
    scheduler.current.state = RUNNING
    queue = Packet(Packet(None, ID_WORKER, KIND_WORK), ID_WORKER, KIND_WORK)
    scheduler.add_task(ID_WORKER, 1000, queue, WorkerTask(scheduler))
    for handler, device, priority in ((ID_HANDLER_A, ID_DEVICE_A, 2000), (ID_HANDLER_B, ID_DEVICE_B, 3000)):
        queue = None
        for _ in range(3):
            queue = Packet(queue, device, KIND_DEVICE)
        scheduler.add_task(handler, priority, queue, HandlerTask(scheduler))
    scheduler.add_task(ID_DEVICE_A, 4000, None, DeviceTask(scheduler))
    scheduler.add_task(ID_DEVICE_B, 5000, None, DeviceTask(scheduler))
    scheduler.schedule()
    return scheduler.queue_count, scheduler.hold_count


def main(args):
    try:
        count = int_param(args, "size", DEFAULT_SIZE, 1, 10000000)
    except ValueError as error:
        return {"error": str(error)}
    queue_count, hold_count = run_richards(count)
    return {"benchmark": "richards", "size": count, "queue_count": queue_count, "hold_count": hold_count}
