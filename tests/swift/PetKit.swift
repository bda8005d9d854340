// PetKit.swift — the second module of the Swift test (tests/swift/): a
// public class whose instances the main module makes, so that a class from
// another module is named PetKit.Pet, and an open one it subclasses.
open class Pet {
  public var name: String
  public var buddy: Pet?
  public init(name: String) { self.name = name }
}

public final class Collar {
  public var pet: Pet?
  public init() {}
}
