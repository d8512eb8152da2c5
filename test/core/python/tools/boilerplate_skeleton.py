# The four function signatures of the web UI's new-tool boilerplate (ToolkitEditor.svelte),
# with bodies of our own: enough to check that their specs come out as the reference's.
# The test also runs the real boilerplate when a copy of the frontend source is at hand.
from datetime import datetime

from pydantic import BaseModel, Field


class Tools:
    def __init__(self):
        pass

    def get_user_name_and_email_and_id(self, __user__: dict = {}) -> str:
        """
        Get the user name, Email and ID from the user object.
        """
        return f"User: {__user__.get('name', 'Unknown')}"

    def get_current_time(self) -> str:
        """
        Get the current time in a more human-readable format.
        """
        return datetime.now().strftime("%I:%M:%S %p")

    def calculator(
        self,
        equation: str = Field(
            ..., description="The mathematical equation to calculate."
        ),
    ) -> str:
        """
        Calculate the result of an equation.
        """
        return f"{equation} = ?"

    def get_current_weather(
        self,
        city: str = Field(
            "New York, NY", description="Get the current weather for a given city."
        ),
    ) -> str:
        """
        Get the current weather for a given city.
        """
        return f"Weather in {city}: unknown"
