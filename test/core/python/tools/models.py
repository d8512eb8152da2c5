"""
title: Models
description: nested pydantic models
"""
from typing import List, Optional

from pydantic import BaseModel, Field


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Paris"


class Person(BaseModel):
    name: str = Field(..., description="Full name")
    title: Optional[str] = None
    address: Address
    previous: List[Address] = []


class Node(BaseModel):
    label: str
    children: List["Node"] = []


class Tools:
    def add_person(self, person: Person, note: Optional[Address] = None):
        """
        Store a person.
        :param person: Who
        :param note: Where they were seen
        """
        return person

    def tree(self, root: Node, title: str = "tree"):
        """A recursive model, and a parameter named title."""
        return root

    def many(self, people: list[Person], pairs: dict[str, Address] = {}):
        """Models inside containers."""
        return len(people)
