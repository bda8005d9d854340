// main.swift — a Swift program that knows what it allocated (tests/swift/,
// run by tests/swift/check_swift.py inside the trixie+swiftlang root): it
// makes instances of plain, nested, generic, subclassed and other-module
// classes, planted strong / weak / unowned / unowned(unsafe) references, a
// closure-captures-self cycle and a delegate cycle that it then drops (leaks),
// and a weakly referenced object kept alive only by a leaked cycle; captures
// itself with hg_capture (through the C shim, shim.c) and prints a manifest
// of all of it (one "key value..." line each) for the checker.
import PetKit

@_silgen_name("swift_test_capture")
func swiftTestCapture(_ path: UnsafePointer<CChar>, _ fork: Int32) -> Int32
@_silgen_name("swift_test_adversarial")
func swiftTestAdversarial(_ meta: UnsafeRawPointer, _ size: Int) -> Int
@_silgen_name("swift_test_adversarial_addr")
func swiftTestAdversarialAddr(_ i: Int) -> UInt

func addr(_ o: AnyObject) -> String {
  return "0x" + String(UInt(bitPattern: Unmanaged.passUnretained(o).toOpaque()), radix: 16)
}

final class Node {
  var next: Node?
  weak var parent: Node?
  unowned var root: Node
  unowned(unsafe) var raw: Node
  var count: Int = 0
  init(root: Node?) {
    // a root Node is its own root
    self.root = root ?? Node.placeholder
    self.raw = root ?? Node.placeholder
  }
  static let placeholder = Node(placeholderOf: ())
  init(placeholderOf: ()) {
    root = unsafeBitCast(0 as Int, to: Node.self)  // never read
    raw = unsafeBitCast(0 as Int, to: Node.self)
  }
}

class Outer {
  class Inner {
    var outer: Outer?
    init() {}
  }
  var inner = Inner()
}

class Box<T> {
  var value: T
  var other: AnyObject?
  init(_ v: T) { value = v }
}

class Animal {
  var friend: Animal?
  var tag: Int = 7
}

final class Dog: Animal {
  var bone: Node?
}

final class MyPet: Pet {
  var collar: Collar?
}

final class Controller {
  var handler: (() -> Void)?
  var clicks = 0
  // captures self and an Int: a closure context object holds them
  func setup(step: Int) { handler = { self.clicks += step } }
}

final class Clicker {
  var onClick: (() -> Void)?
  var clicks = 0
  // captures self alone: Swift makes self the context (no context object)
  func setup() { onClick = { self.clicks += 1 } }
}

final class Owner {
  var delegate: Helper?
}

final class Helper {
  var owner: Owner?
}

final class Target {
  var partner: Target?
}

final class Watcher {
  weak var target: Target?
}

final class Boxed {
  var n = 1
}

var keep: [AnyObject] = []
var lines: [String] = []
func say(_ s: String) { lines.append(s) }

let nNodes = 300, nInner = 40, nBoxN = 25, nBoxI = 35, nDogs = 20, nAnimals = 15,
    nPets = 12, nMyPets = 9, nCollars = 9, nLeakC = 6, nLeakD = 5

// plain: a chain of nodes with a root
let root = Node(root: nil)
keep.append(root)
var prev: Node? = nil
var nodes: [Node] = []
for i in 0..<(nNodes - 1) {
  let n = Node(root: root)
  n.count = i
  n.parent = prev ?? root
  prev?.next = n
  nodes.append(n)
  prev = n
}
keep.append(nodes as AnyObject)
say("count Zoo.Node \(nNodes + 1)")  // and Node.placeholder
let n1 = nodes[1]
say("edge \(addr(n1)) next strong \(addr(nodes[2]))")
say("edge \(addr(n1)) parent weak \(addr(nodes[0]))")
say("edge \(addr(n1)) root unowned \(addr(root))")
say("edge \(addr(n1)) raw unowned \(addr(root))")

// nested
var outers: [Outer] = []
for _ in 0..<nInner { let o = Outer(); o.inner.outer = nil; outers.append(o) }
keep.append(outers as AnyObject)
say("count Zoo.Outer \(nInner)")
say("count Zoo.Outer.Inner \(nInner)")
say("edge \(addr(outers[0])) inner strong \(addr(outers[0].inner))")

// generic
var boxes: [AnyObject] = []
for i in 0..<nBoxN { let b = Box(nodes[i]); boxes.append(b) }
for i in 0..<nBoxI { boxes.append(Box(i)) }
keep.append(boxes as AnyObject)
say("count Zoo.Box<Zoo.Node> \(nBoxN)")
say("count Zoo.Box<Swift.Int> \(nBoxI)")
let b0 = boxes[0] as! Box<Node>
b0.other = outers[1]
say("edge \(addr(b0)) value strong \(addr(nodes[0]))")
say("edge \(addr(b0)) other strong \(addr(outers[1]))")

// subclass, inherited fields
var dogs: [Dog] = []
for i in 0..<nDogs { let d = Dog(); d.bone = nodes[i]; dogs.append(d) }
var animals: [Animal] = []
for _ in 0..<nAnimals { animals.append(Animal()) }
dogs[0].friend = animals[0]
keep.append(dogs as AnyObject); keep.append(animals as AnyObject)
say("count Zoo.Dog \(nDogs)")
say("count Zoo.Animal \(nAnimals)")
say("edge \(addr(dogs[0])) friend strong \(addr(animals[0]))")
say("edge \(addr(dogs[0])) bone strong \(addr(nodes[0]))")

// another module
var pets: [Pet] = []
for i in 0..<nPets { pets.append(Pet(name: "pet\(i)")) }
var collars: [Collar] = []
for i in 0..<nMyPets {
  let p = MyPet(name: "my\(i)")
  let c = Collar()
  c.pet = pets[i]
  p.collar = c
  p.buddy = pets[i]
  collars.append(c)
  pets.append(p)
}
keep.append(pets as AnyObject)
say("count PetKit.Pet \(nPets)")
say("count Zoo.MyPet \(nMyPets)")
say("count PetKit.Collar \(nCollars)")
let mp = pets[nPets] as! MyPet
say("edge \(addr(mp)) buddy strong \(addr(pets[0]))")
say("edge \(addr(mp)) collar strong \(addr(mp.collar!))")
say("edge \(addr(mp.collar!)) pet strong \(addr(pets[0]))")

// leaked cycles: closure captures self; delegate
func makeLeaks() {
  for _ in 0..<nLeakC {
    let c = Controller()
    c.setup(step: 2)
    say("leak-closure \(addr(c))")
    let k = Clicker()
    k.setup()
    say("leak-self \(addr(k)) onClick")
  }
  for _ in 0..<nLeakD {
    let o = Owner(), h = Helper()
    o.delegate = h
    h.owner = o
    say("leak-delegate \(addr(o)) \(addr(h))")
  }
}
makeLeaks()
say("count Zoo.Controller \(nLeakC)")
say("count Zoo.Clicker \(nLeakC)")
say("count Zoo.Owner \(nLeakD)")
say("count Zoo.Helper \(nLeakD)")

// a weakly referenced object kept alive only by a leaked cycle
let watcher = Watcher()
keep.append(watcher)
func makeWeakTarget() {
  let t1 = Target(), t2 = Target()
  t1.partner = t2
  t2.partner = t1
  watcher.target = t1
  say("weak \(addr(watcher)) target \(addr(t1)) \(addr(t2))")
}
makeWeakTarget()
say("count Zoo.Target 2")
say("count Zoo.Watcher 1")

// a captured var lives in a box (swift_allocBox), the closure's context
// points at the box, the box at its value
func makeBoxed() -> () -> Boxed {
  var b = Boxed()
  let get = { b }
  b = Boxed()
  say("box \(addr(b))")
  return get
}
let getBoxed = makeBoxed()

// a captured var of a generic type: the runtime's box (swift_allocBox of
// a generic box, metadata kind 0x500), "Swift box<Zoo.Boxed>" with "value"
func makeGenericBoxed<T>(_ v: T) -> () -> T {
  var x = v
  let get = { x }
  x = v  // mutated after the capture: stays a box
  return get
}
let genBoxed = Boxed()
let getGenBoxed = makeGenericBoxed(genBoxed)
say("genbox \(addr(genBoxed))")
say("count Zoo.Boxed 2")

// a dictionary's storage, named with its key and value types
var dict: [Int: Node] = [:]
for i in 0..<5 { dict[i] = nodes[i] }
say("named 1 Swift._DictionaryStorage<Swift.Int, Zoo.Node>")

// C blocks that point at Swift metadata but are not instances
let nAdv = swiftTestAdversarial(unsafeBitCast(Node.self as AnyClass, to: UnsafeRawPointer.self),
                                class_getInstanceSizeOf(Node.self))
for i in 0..<nAdv { say("notswift 0x" + String(swiftTestAdversarialAddr(i), radix: 16)) }

func class_getInstanceSizeOf(_ t: AnyClass) -> Int {
  // instance size from the metadata (+24 on Linux, see docs/swift.md)
  let m = unsafeBitCast(t, to: UnsafeRawPointer.self)
  return Int(m.load(fromByteOffset: 24, as: UInt32.self))
}

let args = CommandLine.arguments
let path = args.count > 1 ? args[1] : "/tmp/swift.hgsnap"
let fork: Int32 = args.count > 2 && args[2] == "fork" ? 1 : 0
let rc = swiftTestCapture(path, fork)
say("capture \(rc)")
for l in lines { print(l) }
withExtendedLifetime((keep, getBoxed, getGenBoxed, dict)) {}
