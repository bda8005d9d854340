// stdlib.swift — the least standard library classes.swift needs
// (swiftc -parse-stdlib -module-name Swift): there is no iOS Swift
// standard library without an SDK.
precedencegroup AssignmentPrecedence { assignment: true associativity: right }
@frozen public enum Optional<Wrapped> { case none; case some(Wrapped) }
@frozen public struct Int { public var _value: Builtin.Int64 }
public typealias Void = ()
