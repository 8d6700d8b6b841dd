"""The Triton host program as records, and the buffer plan made on them.

The host writer (host_program.py) emits one record per step: an allocation, a tensor
bound to an expression (new memory or a view of what it reads), a statement (a
launch, a copy, a check, a size), the return. Each record says which names it reads,
so buffer planning walks records, as Inductor's wrapper walks its AllocateLine,
ReuseLine and FreeIfNotReusedLine, and never parses the text it prints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Allocate:
    """`name = expression`: new memory of a static shape (torch.empty_strided), which
    the planner may take from an earlier buffer of the same `expression`, or from one of
    `overwritable`, inputs of the launch that writes it which it may be written over
    (in_place_writes.py) where they have its `stride`."""
    name: str
    expression: str
    overwritable: tuple[str, ...] = ()
    stride: str = ""


@dataclass(frozen=True)
class Bind:
    """`name = expression`, a tensor: new memory where `fresh` (a library call, a
    copy), else possibly a view of any tensor it `reads`. An `output` is returned. A
    copy of the tensor `copy_of`, which the host then writes into (a scatter's or an
    inserted slice's destination), may take that tensor's memory instead
    (taking_dead_copies). A `check` is lines run right after the binding (whether
    aten laid its result out as predicted), which go where the binding goes."""
    name: str
    expression: str
    reads: tuple[str, ...]
    fresh: bool
    output: bool = False
    copy_of: str = ""
    check: tuple[str, ...] = ()


@dataclass(frozen=True)
class Statement:
    """Lines that bind no tensor (a launch, a copy into a view, a check, a size) and
    read `reads`."""
    lines: tuple[str, ...]
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Return:
    expression: str
    reads: tuple[str, ...]


@dataclass(frozen=True)
class Reuse:
    """Allocation `name` takes the memory of `source`, which nothing reads any more."""
    name: str
    source: str


@dataclass(frozen=True)
class Free:
    names: tuple[str, ...]


Record = Allocate | Bind | Statement | Return | Reuse | Free


def _mentions(record: Record) -> tuple[str, ...]:
    if isinstance(record, Allocate):
        return (record.name,)
    if isinstance(record, Bind):
        return (record.name, *record.reads)
    if isinstance(record, Reuse):
        return (record.name, record.source)
    if isinstance(record, (Statement, Return)):
        return record.reads
    return ()


def skipping_unread_views(records: list[Record]) -> list[Record]:
    """`records` without the views that nothing reads (a tensor bound to a view, not
    returned, that no later record reads), and then without those only they read."""
    while True:
        read = {name for record in records
                if isinstance(record, (Bind, Statement, Return)) for name in record.reads}
        kept = [record for record in records
                if not (isinstance(record, Bind) and not record.fresh and not record.output
                        and record.name not in read)]
        if len(kept) == len(records):
            return kept
        records = kept


def _memory(records: list[Record]) -> dict[str, set[str]]:
    """Name -> the allocations (Allocate, or fresh Bind) whose memory it may hold: its
    own, or for a view, those of what it reads, taken transitively."""
    memory: dict[str, set[str]] = {}
    for record in records:
        if isinstance(record, Allocate):
            memory[record.name] = {record.name}
        elif isinstance(record, Bind):
            memory[record.name] = {record.name} if record.fresh else \
                set().union(*(memory.get(name, set()) for name in record.reads))
    return memory


def _last_reads(records: list[Record], memory: dict[str, set[str]]) -> dict[str, int]:
    """Allocation -> the index of the last record that mentions a name holding it."""
    last_read: dict[str, int] = {}
    for index, record in enumerate(records):
        for name in _mentions(record):
            for allocation in memory.get(name, ()):
                last_read[allocation] = index
    return last_read


def taking_dead_copies(records: list[Record]) -> list[Record]:
    """Each copy (Bind.copy_of) of a buffer that nothing reads after it takes that
    buffer's memory instead of copying it: its writes then go where nothing looks any
    more. The buffer's memory must be its own (a buffer, not an output, a graph input
    or a view of one). torch-mlir assembles a gather's backward indices so: a column
    inserted into a copy of the index tensor, per column (DeBERTa's 8 x 12 x 512 x 512
    relative-attention gathers: three copies of a 600 MB tensor each)."""
    memory = _memory(records)
    last_read = _last_reads(records, memory)
    planned: list[Record] = []
    for index, record in enumerate(records):
        source = record.copy_of if isinstance(record, Bind) else ""
        if source and memory.get(source) == {source} and last_read.get(source) == index:
            record = Bind(record.name, source, (source,), fresh=False)
        planned.append(record)
    return planned


def writing_in_place(records: list[Record]) -> list[Record]:
    """Each allocation written by a launch that may write it over one of its inputs
    (Allocate.overwritable) takes that input's memory where nothing reads the input
    after that launch: the input itself, where it was allocated with the same
    expression, else the input where its strides are the allocation's (a library
    call's result, whose layout cuDNN or cuBLAS chose) and new memory where not. The
    input's memory must be its own: a buffer, not an output, a graph input or a view
    of one."""
    memory = _memory(records)
    last_read = _last_reads(records, memory)
    expressions = {r.name: r.expression for r in records if isinstance(r, Allocate)}
    taken: set[str] = set()
    planned: list[Record] = []
    for index, record in enumerate(records):
        if isinstance(record, Allocate) and record.overwritable:
            launch = next(i for i in range(index + 1, len(records))
                          if record.name in _mentions(records[i]))
            source = next((name for name in record.overwritable
                           if memory.get(name) == {name} and name not in taken
                           and last_read.get(name) == launch), None)
            if source is not None:
                taken.add(source)
                if expressions.get(source) == record.expression:
                    record = Bind(record.name, source, (source,), fresh=False)
                else:
                    record = Bind(record.name, f"{source} if {source}.stride() == "
                                  f"{record.stride} else {record.expression}", (source,),
                                  fresh=False)
        planned.append(record)
    return planned


def reusing_buffers(records: list[Record]) -> list[Record]:
    """Buffer planning: each allocation that can take the memory of an earlier
    allocation of the same expression (shape, strides, dtype), whose memory nothing
    reads any more, becomes a Reuse of it.

    A buffer's memory is read through its name and through every tensor bound to an
    expression that reads it (views, slices, outputs; not fresh ones: library calls
    and copies return new memory), taken transitively; it is free after the last
    record that mentions any of them. Outputs are read by the return, so never freed.
    One stream runs a call's launches in order, so a kernel that writes the reused
    memory runs after every kernel that read it before.

    Memory is reused only when nothing is allocated between its last read and the new
    allocation: that is the block torch's caching allocator would hand out there too,
    so the plan saves its call's host time and never raises the peak. Reuse across
    other allocations did: holding a freed buffer for a later one kept it from the
    library calls in between (benchmarks/peak_memory.py)."""
    memory = _memory(records)
    last_read = _last_reads(records, memory)
    dead_after: dict[int, list[str]] = {}
    for allocation, index in last_read.items():
        dead_after.setdefault(index, []).append(allocation)
    expressions = {r.name: r.expression for r in records if isinstance(r, Allocate)}
    planned: list[Record] = []
    free: list[str] = []  # allocations no longer read, and nothing allocated since
    for index, record in enumerate(records):
        reusable = [f for f in free if isinstance(record, Allocate)
                    and expressions[f] == record.expression]
        if reusable:
            free.remove(reusable[0])
            record = Reuse(record.name, reusable[0])
        elif isinstance(record, (Allocate, Bind)):
            # Any other tensor bound may allocate (views too, conservatively: a
            # reshape may copy).
            free.clear()
        planned.append(record)
        free += [a for a in dead_after.get(index, []) if a in expressions]
    return planned


def freeing_buffers(records: list[Record]) -> list[Record]:
    """`records` with each buffer (a tensor the program binds, not an output) deleted
    after the record that mentions it last, so that torch's caching allocator can hand
    its memory to a later buffer of the same call (a buffer viewed by a later name
    stays alive through that name). Without this, every intermediate of a call stays
    allocated until the call returns."""
    buffers = {r.name for r in records
               if isinstance(r, (Allocate, Reuse)) or (isinstance(r, Bind) and not r.output)}
    last_use: dict[str, int] = {}
    for index, record in enumerate(records):
        for name in _mentions(record):
            if name in buffers:
                last_use[name] = index
    dead_after: dict[int, list[str]] = {}
    for name, index in last_use.items():
        dead_after.setdefault(index, []).append(name)
    freed: list[Record] = []
    for index, record in enumerate(records):
        freed.append(record)
        if index in dead_after and not isinstance(record, Return):
            freed.append(Free(tuple(sorted(dead_after[index]))))
    return freed


def printed(record: Record) -> list[str]:
    """The host program's lines of `record`."""
    if isinstance(record, Bind) and record.check:
        return [f"{record.name} = {record.expression}", *record.check]
    if isinstance(record, (Allocate, Bind)):
        return [f"{record.name} = {record.expression}"]
    if isinstance(record, Reuse):
        return [f"{record.name} = {record.source}  # reuses {record.source}'s memory"]
    if isinstance(record, Statement):
        return list(record.lines)
    if isinstance(record, Return):
        return [f"return {record.expression}"]
    return [f"del {', '.join(record.names)}"]
