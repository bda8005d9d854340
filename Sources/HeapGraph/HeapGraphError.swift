// HeapGraphError.swift — the library's hg_error codes (include/heapgraph.h,
// section 1) as a Swift error.
import CHeapGraph

public enum HeapGraphError: Error, Equatable, CustomStringConvertible {
    case invalidArgument        // HG_EINVAL
    case outOfMemory            // HG_ENOMEM
    case io                     // HG_EIO
    case noSpace                // HG_ENOSPC
    case malformed              // HG_EFORMAT
    case truncated              // HG_ETRUNCATED
    case badChecksum            // HG_ECHECKSUM
    case unsupportedVersion     // HG_EVERSION
    case limit                  // HG_ELIMIT
    case timeout                // HG_ETIMEOUT
    case busy                   // HG_EBUSY: allocator locks stayed held
    case unsupported            // HG_EUNSUPPORTED
    case permission             // HG_EPERM
    case notFound               // HG_ENOTFOUND
    case internalError          // HG_EINTERNAL
    case noDirectory            // HG_ENOENT: the output directory does not exist
    case notRegularFile         // HG_ENOTREG
    case childTimeout           // HG_ECHILDTIME
    case other(Int32)           // a code this wrapper does not know yet

    /// The error of an hg_* return code (nil for 0 and positive values).
    public init?(code: Int32) {
        switch code {
        case _ where code >= 0: return nil
        case Int32(HG_EINVAL.rawValue): self = .invalidArgument
        case Int32(HG_ENOMEM.rawValue): self = .outOfMemory
        case Int32(HG_EIO.rawValue): self = .io
        case Int32(HG_ENOSPC.rawValue): self = .noSpace
        case Int32(HG_EFORMAT.rawValue): self = .malformed
        case Int32(HG_ETRUNCATED.rawValue): self = .truncated
        case Int32(HG_ECHECKSUM.rawValue): self = .badChecksum
        case Int32(HG_EVERSION.rawValue): self = .unsupportedVersion
        case Int32(HG_ELIMIT.rawValue): self = .limit
        case Int32(HG_ETIMEOUT.rawValue): self = .timeout
        case Int32(HG_EBUSY.rawValue): self = .busy
        case Int32(HG_EUNSUPPORTED.rawValue): self = .unsupported
        case Int32(HG_EPERM.rawValue): self = .permission
        case Int32(HG_ENOTFOUND.rawValue): self = .notFound
        case Int32(HG_EINTERNAL.rawValue): self = .internalError
        case Int32(HG_ENOENT.rawValue): self = .noDirectory
        case Int32(HG_ENOTREG.rawValue): self = .notRegularFile
        case Int32(HG_ECHILDTIME.rawValue): self = .childTimeout
        default: self = .other(code)
        }
    }

    /// The hg_error code.
    public var code: Int32 {
        switch self {
        case .invalidArgument: return Int32(HG_EINVAL.rawValue)
        case .outOfMemory: return Int32(HG_ENOMEM.rawValue)
        case .io: return Int32(HG_EIO.rawValue)
        case .noSpace: return Int32(HG_ENOSPC.rawValue)
        case .malformed: return Int32(HG_EFORMAT.rawValue)
        case .truncated: return Int32(HG_ETRUNCATED.rawValue)
        case .badChecksum: return Int32(HG_ECHECKSUM.rawValue)
        case .unsupportedVersion: return Int32(HG_EVERSION.rawValue)
        case .limit: return Int32(HG_ELIMIT.rawValue)
        case .timeout: return Int32(HG_ETIMEOUT.rawValue)
        case .busy: return Int32(HG_EBUSY.rawValue)
        case .unsupported: return Int32(HG_EUNSUPPORTED.rawValue)
        case .permission: return Int32(HG_EPERM.rawValue)
        case .notFound: return Int32(HG_ENOTFOUND.rawValue)
        case .internalError: return Int32(HG_EINTERNAL.rawValue)
        case .noDirectory: return Int32(HG_ENOENT.rawValue)
        case .notRegularFile: return Int32(HG_ENOTREG.rawValue)
        case .childTimeout: return Int32(HG_ECHILDTIME.rawValue)
        case .other(let c): return c
        }
    }

    /// The library's text for the code (hg_error_string).
    public var description: String { String(cString: hg_error_string(code)) }

    /// Throws the error of a negative hg_* return code.
    static func check(_ code: Int32) throws {
        if let e = HeapGraphError(code: code) { throw e }
    }
}
