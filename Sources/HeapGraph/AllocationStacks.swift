// AllocationStacks.swift — HeapGraph.startRecordingAllocationStacks and
// stopRecordingAllocationStacks: the allocation-stack recorder (include/heapgraph.h section 11; Darwin: the
// libmalloc malloc_logger hook, Linux: the malloc interposer of
// libheapgraph.so). Every later capture then carries each block's stack.
import CHeapGraph

extension HeapGraph {
    public struct StackRecording {
        /// Frames kept per stack (at most 64).
        public var maxFrames: UInt32 = 32
        /// Memory the recorder may use; when full it stops and snapshots say so.
        public var budgetBytes: UInt64 = 256 << 20
        /// 0: every block; N: sample one block per N bytes allocated on average.
        public var sampleBytes: UInt64 = 0
        public init() {}
    }

    /// Starts recording allocation stacks, until `stopRecordingAllocationStacks`
    /// (or the budget is spent). After a stop it resumes with the first
    /// start's settings (`r` is not read again). Throws `.unsupported`
    /// where this build has no hook (the Swift package on Linux, which
    /// leaves the interposer out), `.busy` when already recording.
    public static func startRecordingAllocationStacks(_ r: StackRecording = StackRecording()) throws {
        var o = hg_stacks_options()
        hg_stacks_options_init(&o)
        o.max_frames = r.maxFrames
        o.budget_bytes = r.budgetBytes
        o.sample_bytes = r.sampleBytes
        try HeapGraphError.check(hg_stacks_start(&o))
    }

    /// Stops recording new allocations (hg_stacks_stop). The blocks
    /// recorded so far keep their stacks in later captures (their frees
    /// are still followed; the snapshot's stack status says "stopped").
    /// Returns false when nothing was recording.
    @discardableResult
    public static func stopRecordingAllocationStacks() -> Bool {
        hg_stacks_stop() == 0
    }
}
