// classes.swift — Swift classes compiled for iOS (arm64, arm64e) by the
// trixie root's swiftc, as the module "Swift" of a minimal standard library
// (stdlib.swift; no iOS SDK here): their reflection records are read by
// tests/swift/test_swift_macho.c through the Darwin path of the parser
// (_hg_swift_fields, descriptor at +64 with ObjC interop). Optionals are
// spelled Optional<T>: the sugared T? needs the real standard library.
public final class Node {
  public var next: Optional<Node>
  public weak var parent: Optional<Node>
  public unowned var root: Node
  public unowned(unsafe) var raw: Node
  public var count: Int
  public var handler: Optional<() -> ()>
  public init(root: Node, count: Int) {
    self.root = root; self.raw = root; self.count = count
    self.next = .none; self.parent = .none; self.handler = .none
  }
}
public class Animal {
  public var friend: Optional<Animal>
  public init() { friend = .none }
}
public final class Dog: Animal {
  public var bone: Optional<Node>
  public override init() { bone = .none; super.init() }
}
