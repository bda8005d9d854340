// Upload.swift — the upload hand-off of a HeapGraph.Spool (hg_upload_peek,
// hg_upload_report): the library says which file goes next and with which
// headers, the app sends it (URLSession, a background session on iOS) and
// reports the answer; the library removes, drops or keeps it and backs off
// (state in the spool, so it survives a relaunch). docs/integration-ios.md
// has the background-session example.
import CHeapGraph
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HeapGraph.Spool {
    /// The next file to send.
    public struct Upload {
        /// The file (the body of the POST); it stays until reported.
        public var fileURL: URL { URL(fileURLWithPath: cString(item.path)) }
        /// Its name in the spool: keep it (e.g. as the URLSessionTask's
        /// taskDescription) to report the outcome after a relaunch.
        public var name: String { cString(item.name) }
        public var bytes: UInt64 { item.bytes }
        /// The snapshot's XXH64 in hex (the server dedups by it).
        public var checksum: String { cString(item.checksum) }
        /// Headers to send (Content-Type, Content-Encoding for a .gz,
        /// X-Heapgraph-Checksum, Idempotency-Key); not Authorization.
        public var headers: [(name: String, value: String)] {
            withUnsafeBytes(of: item.headers) { raw in
                let size = raw.count / Int(HG_UPLOAD_MAX_HEADERS)
                return (0..<Int(item.header_count)).compactMap { i in
                    let line = String(decoding: raw[(i * size)..<((i + 1) * size)].prefix(while: { $0 != 0 }), as: UTF8.self)
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
            }
        }
        var item: hg_upload_item

        /// The POST to `endpoint` with these headers and
        /// `Authorization: Bearer apiKey`; send `fileURL` as its body
        /// (`URLSession.uploadTask(with:fromFile:)`).
        public func request(to endpoint: URL, apiKey: String) -> URLRequest {
            var r = URLRequest(url: endpoint)
            r.httpMethod = "POST"
            for h in headers { r.setValue(h.value, forHTTPHeaderField: h.name) }
            r.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
            return r
        }
    }

    public enum Next {
        case upload(Upload)
        case empty
        /// Backing off after a failed try (or another process uploads):
        /// ask again after this long.
        case wait(TimeInterval)
    }

    /// What the library did with a reported file.
    public enum Outcome: Equatable {
        case empty
        case sent        // 201: removed
        case duplicate   // 200: the server had it; removed
        case dropped     // 413/422, other 4xx, or too many tries: removed, reason logged
        case retry       // no answer, 408, 429, 5xx: kept, retried after a backoff
        case wait
        case other(Int32)

        init(_ raw: Int32) {
            switch UInt32(bitPattern: raw) {
            case HG_UPLOAD_EMPTY.rawValue: self = .empty
            case HG_UPLOAD_SENT.rawValue: self = .sent
            case HG_UPLOAD_DUPLICATE.rawValue: self = .duplicate
            case HG_UPLOAD_DROPPED.rawValue: self = .dropped
            case HG_UPLOAD_RETRY.rawValue: self = .retry
            case HG_UPLOAD_WAIT.rawValue: self = .wait
            default: self = .other(raw)
            }
        }
    }

    /// The oldest queued file, unless the spool is backing off.
    public func nextUpload() throws -> Next {
        var item = hg_upload_item()
        var wait: UInt64 = 0
        let rc = hg_upload_peek(handle, &item, &wait)
        if rc == Int32(HG_ENOTFOUND.rawValue) { return .empty }
        if rc == Int32(HG_EBUSY.rawValue) { return .wait(TimeInterval(wait) / 1000) }
        try HeapGraphError.check(rc)
        return .upload(Upload(item: item))
    }

    /// Reports the answer to sending `upload`: the HTTP status (0: no
    /// answer) and Retry-After in seconds.
    @discardableResult
    public func report(_ upload: Upload, httpStatus: Int, retryAfter: UInt32 = 0) throws -> Outcome {
        var item = upload.item
        let rc = hg_upload_report(handle, &item, Int32(clamping: httpStatus), retryAfter)
        try HeapGraphError.check(rc)
        return Outcome(rc)
    }

    /// The same for the file called `name` (an `Upload.name` kept across a
    /// relaunch, e.g. in a background task's taskDescription).
    @discardableResult
    public func report(name: String, httpStatus: Int, retryAfter: UInt32 = 0) throws -> Outcome {
        var item = hg_upload_item()
        let path = directory.appendingPathComponent(name).path
        guard !name.isEmpty, !name.contains("/"),
              name.utf8.count < MemoryLayout.size(ofValue: item.name),
              path.utf8.count < MemoryLayout.size(ofValue: item.path) else { throw HeapGraphError.invalidArgument }
        withUnsafeMutableBytes(of: &item.name) { $0.copyBytes(from: Array(name.utf8)) }
        withUnsafeMutableBytes(of: &item.path) { $0.copyBytes(from: Array(path.utf8)) }
        return try report(Upload(item: item), httpStatus: httpStatus, retryAfter: retryAfter)
    }

    /// The same from a URLSession task's outcome: the response's status
    /// and Retry-After (seconds), or no answer when there is none.
    @discardableResult
    public func report(name: String, response: URLResponse?) throws -> Outcome {
        let http = response as? HTTPURLResponse
        var retry: UInt32 = 0
        if let h = http?.allHeaderFields.first(where: { ($0.key as? String)?.lowercased() == "retry-after" }),
           let v = UInt32((h.value as? String)?.trimmingCharacters(in: .whitespaces) ?? "") {
            retry = v
        }
        return try report(name: name, httpStatus: http?.statusCode ?? 0, retryAfter: retry)
    }
}
